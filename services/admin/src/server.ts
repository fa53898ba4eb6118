/** Starts the admin API on node:http, plus an unauthenticated `GET /healthz`. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdminHandler, type AdminApiOptions } from "./api.js";

export interface AdminServer {
  /** Base URL, e.g. http://127.0.0.1:8081 */
  url: string;
  server: Server;
  close(): Promise<void>;
}

export async function startAdminServer(opts: AdminApiOptions & { host?: string; port?: number }): Promise<AdminServer> {
  const handle = createAdminHandler(opts);
  const server = createServer((req, res) => {
    // Liveness for probes and the image's healthcheck: no key, no audit row, no store access.
    if (req.method === "GET" && req.url === "/healthz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    void handle(req, res);
  });
  const host = opts.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    server,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}
