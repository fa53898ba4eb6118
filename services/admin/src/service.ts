/**
 * Starts the admin API on node:http (the standalone admin process), plus an unauthenticated
 * `GET /healthz` and the usage dashboard page under `/dashboard/` (its data comes from this API).
 */
import { createServer, type Server } from "node:http";
import { createAdminHandler, type AdminApiOptions } from "@byok/admin-api";
import { createDashboardHandler } from "@byok/dashboard";
import { closeServer, listen } from "@byok/process";

export interface AdminServer {
  /** Base URL, e.g. http://127.0.0.1:8081 */
  url: string;
  server: Server;
  close(): Promise<void>;
}

export async function startAdminServer(opts: AdminApiOptions & { host?: string; port?: number }): Promise<AdminServer> {
  const handle = createAdminHandler(opts);
  const dashboard = createDashboardHandler({ adminApiBase: "" });
  const server = createServer((req, res) => {
    if (dashboard(req, res)) return;
    // Liveness for probes and the image's healthcheck: no key, no audit row, no store access.
    if (req.method === "GET" && req.url === "/healthz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    void handle(req, res);
  });
  const url = await listen(server, opts.host ?? "127.0.0.1", opts.port ?? 0);
  return { url, server, close: () => closeServer(server) };
}
