import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["libs/*/src/**/*.test.ts", "libs/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "services/*/src/**/*.test.ts", "deploy/test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: run files in parallel but bounded; integration tests use unique key prefixes.
    maxWorkers: 2,
  },
});
