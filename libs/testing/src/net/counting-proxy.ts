import { connect, createServer, type Socket } from "node:net";

/** A TCP proxy that counts the connections made through it (connection reuse tests and benches) and can freeze them (a partition: stop-during-outage tests). */
export interface CountingProxy {
  /** `http://127.0.0.1:<port>`: the target's URL with the proxy's port. */
  url: string;
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  /** A partition: from now on nothing passes either way, and every connection stays open. */
  freeze(): void;
  /** Bytes sent into the partition since `freeze()` (read and dropped): what a caller waits on to know a request is caught. */
  heldBytes(): number;
  close(): Promise<void>;
}

/** Starts a proxy on an ephemeral 127.0.0.1 port that pipes every connection to `target` (`http://host:port`). */
export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const { hostname, port: targetPort } = new URL(target);
  let accepted = 0;
  let frozen = false;
  let held = 0;
  const open = new Set<Socket>();
  // Frozen: whatever arrives is counted and goes nowhere (no side hears back; the socket stays open).
  const hold = (s: Socket) => s.on("data", (chunk: Buffer) => void (held += chunk.byteLength)).resume();
  const server = createServer((client) => {
    accepted++;
    if (frozen) {
      open.add(client);
      client.on("error", () => undefined);
      return void hold(client);
    }
    const upstream = connect(Number(targetPort), hostname);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on("close", () => open.delete(s));
      // A reset on one side ends the other; the test sees it as its client would.
      s.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("counting proxy: no TCP address");
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    connections: () => accepted,
    freeze: () => {
      frozen = true;
      for (const s of open) {
        s.unpipe();
        hold(s);
      }
    },
    heldBytes: () => held,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
