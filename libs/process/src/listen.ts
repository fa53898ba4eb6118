import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Listens on host:port (port 0 = any free port) and returns the base URL to reach it. An
 * unspecified address (0.0.0.0, ::) is reached over loopback; IPv6 hosts are bracketed.
 */
export async function listen(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return urlOf(server.address() as AddressInfo);
}

function urlOf(addr: AddressInfo): string {
  if (addr.address === "0.0.0.0") return `http://127.0.0.1:${addr.port}`;
  if (addr.address === "::") return `http://[::1]:${addr.port}`;
  return `http://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}`;
}

/** Closes a server and every connection it holds (long-lived streams included). */
export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}
