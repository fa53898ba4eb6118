import type { Server } from "node:http";
import type { AddressInfo, Server as NetServer } from "node:net";

/**
 * Listens on host:port (port 0 = any free port) and returns the base URL to reach it: the one
 * listen of every gateway process (the probe-only servers and the edge's port alike). An
 * unspecified address (0.0.0.0, ::) is reached over loopback (127.0.0.1, [::1]); other IPv6
 * hosts are bracketed.
 */
export async function listen(
  server: NetServer,
  host: string,
  port: number,
  scheme: "http" | "https" = "http",
  opts: { backlog?: number; reusePort?: boolean } = {},
): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host, ...(opts.backlog !== undefined ? { backlog: opts.backlog } : {}), ...(opts.reusePort ? { reusePort: true } : {}) }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return urlOf(server.address() as AddressInfo, scheme);
}

function urlOf(addr: AddressInfo, scheme: "http" | "https"): string {
  if (addr.address === "0.0.0.0") return `${scheme}://127.0.0.1:${addr.port}`;
  if (addr.address === "::") return `${scheme}://[::1]:${addr.port}`;
  return `${scheme}://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}`;
}

/** Closes a server and every connection it holds (long-lived streams included). */
export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}
