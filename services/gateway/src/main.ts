import { ConfigError, loadConfig } from "@byok/config";
import { startEmbeddedGateway } from "./service.js";

// `npm start`: the all-in-one embedded gateway.
try {
  const config = loadConfig(process.env, { mode: "embedded" });
  const gw = await startEmbeddedGateway(config);
  const storeWhere = config.store.driver === "pglite" ? `PGlite at ${config.store.dataDir}` : "PostgreSQL";
  console.log(`Cursor BYOK Gateway (embedded) listening on ${gw.url}  ·  store: ${storeWhere}  ·  routes: ${config.file.routes.length}`);
  const stop = async () => {
    console.log("shutting down …");
    await gw.close();
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
