import { globSync, readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";

const INCLUDE = ["libs/*/src/**/*.test.ts", "libs/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "services/*/src/**/*.test.ts", "deploy/test/**/*.test.ts"];

/**
 * Test files that register OpenTelemetry's process-global providers (tracer, propagator,
 * context manager). A tracer taken at module load keeps the first provider it resolved, so
 * these files need a fresh module graph each: they run isolated. Found by what they import,
 * so a new test of that kind lands here without anyone listing it.
 */
const GLOBAL_TELEMETRY = /createMemoryTracing|startTelemetry|startServiceTracing|@opentelemetry\/api/;
const isolatedFiles = globSync(INCLUDE, { exclude: (p) => p.includes("node_modules") }).filter((f) => GLOBAL_TELEMETRY.test(readFileSync(f, "utf8")));

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: run files in parallel but bounded; integration tests use unique key prefixes.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: "isolated", include: isolatedFiles, isolate: true } },
      // Every other file shares its worker's module graph with the files before it: importing the
      // SDKs, drivers and services once per worker instead of once per file (13:13 → 10:45 here, docs/benchmarks.md).
      // Such files keep no state in modules between tests (key prefixes, stores and servers are
      // their own) and close what they open.
      { extends: true, test: { name: "shared", include: INCLUDE, exclude: [...isolatedFiles, "**/node_modules/**"], isolate: false } },
    ],
  },
});
