import { ConfigError, loadConfig } from "@byok/config";
import { runMigrations } from "./service.js";

// The migrations job (`byok migrate`: a Helm pre-install/pre-upgrade hook, the compose
// `migrate` service): applies the store's pending migrations to DATABASE_URL and exits 0, or
// exits non-zero so the deployment stops before new replicas start on an old schema.
try {
  const config = loadConfig(process.env, { mode: "embedded" });
  const report = await runMigrations(config);
  console.log(JSON.stringify({ msg: "migrations applied", schema: report.schema ?? null, applied: report.applied, known: report.known }));
  const missing = report.known.filter((m) => !report.applied.includes(m));
  if (missing.length > 0) {
    console.error(`migrate: not applied after the run: ${missing.join(", ")}`);
    process.exit(1);
  }
} catch (err) {
  console.error(err instanceof ConfigError ? `configuration error: ${err.message}` : `migrate failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(err instanceof ConfigError ? 2 : 1);
}
