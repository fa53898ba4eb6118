/** The admin service opens the store (and its KEK) the way the gateway processes do. */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { kekFor, openGatewayStore } from "@byok/process";
import { loadAdminConfig } from "@byok/config";
import { openAdminStore } from "../src/index.js";

const ADMIN_KEY = `admin-${randomBytes(12).toString("hex")}`;

describe("admin store opening", () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
  const dataDir = async () => {
    const d = await mkdtemp(join(tmpdir(), "byok-admin-"));
    dirs.push(d);
    return join(d, "pglite");
  };

  /** Seals a credential as the embedded gateway would (its KEK: GATEWAY_KEK, else the file next to the data dir), then opens it in the admin. */
  async function sealedByGateway(dir: string, kek: string | undefined) {
    const fallback = { dataDir: dirname(dir) };
    const gateway = await openGatewayStore({ store: { driver: "pglite", dataDir: dir } }, await kekFor({ kek }, fallback));
    await gateway.credentials.put("t-admin", "openai", { kind: "api_key", apiKey: "sk-sealed-by-gateway" });
    await gateway.close();
  }

  it("PGlite without GATEWAY_KEK: the key file the gateway generated beside its data dir opens its credentials", async () => {
    const dir = await dataDir();
    await sealedByGateway(dir, undefined);
    const store = await openAdminStore(loadAdminConfig({ GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_DATA_DIR: dir }));
    try {
      expect(await store.credentials.get("t-admin", "openai")).toEqual({ kind: "api_key", apiKey: "sk-sealed-by-gateway" });
    } finally {
      await store.close();
    }
  });

  it("PGlite with GATEWAY_KEK: the admin uses that key, as the gateway does (not the key file)", async () => {
    const dir = await dataDir();
    const kek = randomBytes(32).toString("base64");
    await sealedByGateway(dir, kek);
    const store = await openAdminStore(loadAdminConfig({ GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_DATA_DIR: dir, GATEWAY_KEK: kek }));
    try {
      expect(await store.credentials.get("t-admin", "openai")).toEqual({ kind: "api_key", apiKey: "sk-sealed-by-gateway" });
    } finally {
      await store.close();
    }
  });

  it("Postgres without GATEWAY_KEK: refuses to start, naming the variable", async () => {
    const config = loadAdminConfig({ GATEWAY_ADMIN_KEY: ADMIN_KEY, DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test" });
    await expect(openAdminStore(config)).rejects.toThrow(/GATEWAY_KEK is not set/);
  });
});
