import { ConfigError, loadConfig } from "@byok/config";
import { startIngressService } from "./service.js";
import { startServiceTracing } from "./trace-file.js";

// An ingress replica (distributed mode): `tsx services/ingress/src/main.ts`.
// Open authentication (one tenant) until the tenancy issue adds API keys.
try {
  const tracing = startServiceTracing("ingress", process.env);
  const config = loadConfig(process.env, { mode: "distributed" });
  const svc = await startIngressService(config, { ...(process.env.GATEWAY_NAME ? { name: process.env.GATEWAY_NAME } : {}) });
  svc.logger.info({ url: svc.url, name: svc.name }, "ingress started");
  // One machine-readable line for scripts and tests.
  console.log(`BYOK_READY ingress ${svc.url} ${svc.name}`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await svc.close();
    await tracing.shutdown();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`configuration error: ${err.message}`);
    process.exit(2);
  }
  throw err;
}
