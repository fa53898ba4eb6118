// A counting TCP proxy in front of PostgreSQL for the benchmark: every statement a gateway
// process sends (simple Query 'Q' and extended-protocol Execute 'E' messages) is counted, with
// the statement text from its Parse ('P') message (a named statement's text is remembered for
// the Binds that name it), so "store statements per turn" is measured
// on the wire, whatever the code does. Load-insensitive (a count, not a time). Not a test.
import { createConnection, createServer, type Server, type Socket } from "node:net";

export interface PgCounter {
  /** postgres:// URL through the proxy (same user, database and parameters as `target`). */
  url: string;
  /** Statements executed so far, by their normalized text (first words, values never included). */
  snapshot(): Map<string, number>;
  close(): Promise<void>;
}

/** Normalizes a statement to its verb and table, e.g. `insert into "history"`, `select … from "blobs"`. */
function statementKind(sql: string): string {
  const s = sql.replace(/\s+/g, " ").trim().toLowerCase();
  const verb = s.split(" ")[0] ?? "?";
  if (verb === "begin" || verb === "commit" || verb === "rollback") return verb;
  const table = /\b(?:into|from|update)\s+("?[a-z_][a-z0-9_."]*)/.exec(s)?.[1] ?? "";
  return `${verb} ${table}`.trim();
}

/**
 * `onStatement` (optional) hears each statement as it goes out, with the proxy's client port
 * (which process sent it): the turn timeline (bench/src/turn-timeline.ts) places them in time.
 */
export async function startPgCounter(targetUrl: string, onStatement?: (kind: string, clientPort: number) => void): Promise<PgCounter> {
  const target = new URL(targetUrl);
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    sockets.add(client).add(upstream);
    client.once("close", () => { sockets.delete(client); upstream.destroy(); });
    upstream.once("close", () => { sockets.delete(upstream); client.destroy(); });
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    upstream.pipe(client);
    let buf: Buffer = Buffer.alloc(0);
    let started = false;
    let lastParsed = "?";
    /** Prepared statements of this connection, by name (the store prepares its hot statements). */
    const named = new Map<string, string>();
    const add = (k: string) => {
      counts.set(k, (counts.get(k) ?? 0) + 1);
      onStatement?.(k, client.remotePort ?? 0);
    };
    client.on("data", (chunk: Buffer) => {
      upstream.write(chunk);
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      for (;;) {
        if (!started) {
          // Startup (or SSLRequest): int32 length, no type byte.
          if (buf.length < 4) break;
          const len = buf.readInt32BE(0);
          if (buf.length < len) break;
          const code = buf.readInt32BE(4);
          buf = buf.subarray(len);
          if (code !== 80877103) started = true; // not an SSLRequest: the real startup message
          continue;
        }
        if (buf.length < 5) break;
        const type = String.fromCharCode(buf[0]!);
        const len = buf.readInt32BE(1);
        if (buf.length < 1 + len) break;
        const body = buf.subarray(5, 1 + len);
        if (type === "Q") add(statementKind(body.toString("utf8", 0, body.indexOf(0))));
        else if (type === "P") {
          // Parse: statement name, text. A named one is bound later by its name alone.
          const nameEnd = body.indexOf(0);
          lastParsed = statementKind(body.toString("utf8", nameEnd + 1, body.indexOf(0, nameEnd + 1)));
          if (nameEnd > 0) named.set(body.toString("utf8", 0, nameEnd), lastParsed);
        } else if (type === "B") {
          // Bind: portal name, statement name (empty: the unnamed statement just parsed).
          const portalEnd = body.indexOf(0);
          const statement = body.toString("utf8", portalEnd + 1, body.indexOf(0, portalEnd + 1));
          if (statement !== "") lastParsed = named.get(statement) ?? "?";
        } else if (type === "E") add(lastParsed);
        buf = buf.subarray(1 + len);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  if (!addr || typeof addr !== "object") throw new Error("pg counter: no address");
  const url = new URL(targetUrl);
  url.hostname = "127.0.0.1";
  url.port = String(addr.port);
  return {
    url: url.toString(),
    snapshot: () => new Map(counts),
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
