// Token signing keys of a process: configured ring wins; embedded mode generates one key into
// the data dir once (0600) and reads it back after a restart; distributed mode without keys has none.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "@byok/config";
import { TOKEN_KEY_FILE, tokenKeysFor } from "../src/index.js";

describe("tokenKeysFor", () => {
  const dir = mkdtempSync(join(tmpdir(), "byok-token-key-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("generates the embedded key once, 0600, and reads the same key back", async () => {
    const config = loadConfig({}, { mode: "embedded" });
    const first = await tokenKeysFor(config, { dataDir: dir });
    expect(first?.map((k) => [k.kid, k.secret.length])).toEqual([["local", 32]]);
    expect(statSync(join(dir, TOKEN_KEY_FILE)).mode & 0o777).toBe(0o600);
    const again = await tokenKeysFor(config, { dataDir: dir });
    expect(Buffer.from(again![0]!.secret).equals(Buffer.from(first![0]!.secret))).toBe(true);
  });

  it("uses the configured ring, and has none in distributed mode without one", async () => {
    const ring = `a:${Buffer.alloc(32, 1).toString("base64")}`;
    expect((await tokenKeysFor(loadConfig({ GATEWAY_TOKEN_KEYS: ring }), { dataDir: dir }))?.[0]?.kid).toBe("a");
    const distributed = loadConfig({ GATEWAY_MODE: "distributed", DATABASE_URL: "postgres://x/y", REDIS_URL: "redis://x" });
    expect(await tokenKeysFor(distributed, undefined)).toBeUndefined();
  });
});
