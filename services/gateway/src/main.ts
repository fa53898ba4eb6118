import { ConfigError, loadConfig } from "@byok/config";
import { exitIfStopStalls } from "@byok/process";
import { startServiceTracing } from "@byok/telemetry";
import { startGatewayService } from "./service.js";

// `npm start`: the all-in-one embedded gateway.
try {
  const config = loadConfig(process.env, { mode: "embedded" });
  // Off unless OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT configure it.
  const tracing = startServiceTracing("gateway", config.telemetry);
  const gw = await startGatewayService(config);
  const storeWhere = config.store.driver === "pglite" ? `PGlite at ${config.store.dataDir}` : "PostgreSQL";
  console.log(`Cursor BYOK Gateway (embedded) listening on ${gw.url}  ·  store: ${storeWhere}  ·  routes: ${config.file.routes.length}`);
  const stop = async () => {
    console.log("shutting down …");
    exitIfStopStalls(config.timers.shutdownTimeoutMs, (m) => console.error(m));
    await gw.close();
    await tracing.shutdown();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`configuration error: ${err.message}`);
    process.exit(2);
  }
  throw err;
}
