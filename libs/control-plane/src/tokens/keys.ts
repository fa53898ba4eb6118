/**
 * The signing keys of a process: GATEWAY_TOKEN_KEYS when set; else, in embedded mode, one key
 * generated once into the data directory (0600), so tokens survive restarts; an in-memory store
 * gets a throw-away key. Distributed mode without keys signs nothing (sign-in answers 503).
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { GatewayConfig, TokenSigningKey } from "@byok/config";

export const TOKEN_KEY_FILE = "gateway-token-key";

export async function tokenKeysFor(config: GatewayConfig, fallback: { dataDir: string } | "ephemeral" | undefined): Promise<TokenSigningKey[] | undefined> {
  if (config.controlPlane.tokenKeys !== undefined) return config.controlPlane.tokenKeys;
  if (config.mode !== "embedded" || fallback === undefined) return undefined;
  if (fallback === "ephemeral") return [{ kid: "ephemeral", secret: new Uint8Array(randomBytes(32)) }];
  const path = join(fallback.dataDir, TOKEN_KEY_FILE);
  let secret: Buffer;
  try {
    secret = Buffer.from((await readFile(path, "utf8")).trim(), "base64");
    if (secret.length < 32) throw new Error(`${path} does not hold base64 of at least 32 bytes`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    secret = randomBytes(32);
    await mkdir(fallback.dataDir, { recursive: true });
    await writeFile(path, secret.toString("base64") + "\n", { mode: 0o600, flag: "wx" }).catch(async (e: NodeJS.ErrnoException) => {
      // Another process wrote it first: use theirs.
      if (e.code !== "EEXIST") throw e;
      secret = Buffer.from((await readFile(path, "utf8")).trim(), "base64");
    });
  }
  return [{ kid: "local", secret: new Uint8Array(secret) }];
}
