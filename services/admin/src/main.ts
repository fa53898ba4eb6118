/** `npx tsx services/admin/src/main.ts`: the admin API as its own process. */
import { createLogger, startServiceTracing } from "@byok/telemetry";
import { loadAdminConfig } from "@byok/config";
import { exitIfStopStalls } from "@byok/process";
import { openAdminStore, startAdminService } from "./service.js";

async function main(): Promise<void> {
  const config = loadAdminConfig(process.env);
  const tracing = startServiceTracing("admin", config.telemetry);
  const store = await openAdminStore(config);
  const server = await startAdminService({
    store,
    adminKey: config.adminKey,
    host: config.host,
    port: config.port,
    telemetry: config.telemetry,
    logger: createLogger({ service: "admin" }),
    onError: (e) => console.error("admin: unexpected error:", e instanceof Error ? e.name : "error"),
  });
  console.log(`admin API listening on ${server.url}`);
  const stop = async () => {
    // A request waiting on a store that stopped answering never ends, and the server's close waits
    // for it: the stop is bounded as every process's is (docs/operations.md "Stopping").
    exitIfStopStalls(config.shutdownTimeoutMs, (m) => console.error(`admin: ${m}`));
    await server.close();
    await store.close();
    await tracing.shutdown();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : "admin failed to start");
  process.exit(1);
});
