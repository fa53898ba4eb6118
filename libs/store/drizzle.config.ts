/**
 * drizzle-kit configuration for @byok/store. Run from the repository root:
 *   npx drizzle-kit generate --config libs/store/drizzle.config.ts --name <what_changed>
 * Paths are relative to the repository root (drizzle-kit resolves them from the cwd).
 */
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./libs/store/src/schema.ts",
  out: "./libs/store/migrations",
});
