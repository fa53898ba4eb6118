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
  close(): Promise<void>;
}

/** Starts a proxy on an ephemeral 127.0.0.1 port that pipes every connection to `target` (`http://host:port`). */
export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const { hostname, port: targetPort } = new URL(target);
  let accepted = 0;
  let frozen = false;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    accepted++;
    if (frozen) return void open.add(client);
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
        s.pause();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
