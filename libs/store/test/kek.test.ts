/** Key-encryption keys: AES-256-GCM behaviour, the env variant and the data-dir file variant. */
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createAesGcmKek, KEK_FILE, KekError, kekFromEnv, loadOrCreateFileKek } from "../src/index.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

describe("AES-256-GCM key-encryption key", () => {
  const kek = createAesGcmKek(randomBytes(32), 3);

  it("round-trips, with a fresh iv each time and no plaintext in the output", async () => {
    const a = await kek.encrypt(enc("sk-secret-value"), enc("aad"));
    const b = await kek.encrypt(enc("sk-secret-value"), enc("aad"));
    expect(a.keyVersion).toBe(3);
    expect([a.iv.length, a.tag.length]).toEqual([12, 16]);
    expect(Buffer.from(a.iv).equals(Buffer.from(b.iv))).toBe(false);
    expect(Buffer.from(a.ciphertext).includes(Buffer.from("sk-secret"))).toBe(false);
    expect(dec(await kek.decrypt(a, enc("aad")))).toBe("sk-secret-value");
  });

  it("refuses another aad, tampered bytes and another version, without echoing anything secret", async () => {
    const s = await kek.encrypt(enc("sk-secret-value"), enc("tenant-a"));
    await expect(kek.decrypt(s, enc("tenant-b"))).rejects.toMatchObject({ code: "decrypt_failed" });
    const flipped = new Uint8Array(s.ciphertext);
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    await expect(kek.decrypt({ ...s, ciphertext: flipped }, enc("tenant-a"))).rejects.toBeInstanceOf(KekError);
    const err = await kek.decrypt({ ...s, keyVersion: 2 }, enc("tenant-a")).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "wrong_key_version" });
    expect(String(err)).not.toContain("sk-secret");
  });

  it("needs exactly 32 bytes", () => {
    expect(() => createAesGcmKek(randomBytes(16))).toThrow(KekError);
  });
});

describe("kekFromEnv", () => {
  it("reads base64 of 32 bytes and a version", async () => {
    const key = randomBytes(32).toString("base64");
    const kek = kekFromEnv({ GATEWAY_KEK: key, GATEWAY_KEK_VERSION: "2" });
    expect(kek.version).toBe(2);
    const other = kekFromEnv({ GATEWAY_KEK: key });
    const sealed = await kek.encrypt(enc("x"), enc("a"));
    expect(dec(await other.decrypt({ ...sealed, keyVersion: 1 }, enc("a")))).toBe("x");
  });

  it("refuses missing, non-base64 and wrong-length values without echoing them", () => {
    for (const value of [undefined, "", "not base64!!", randomBytes(31).toString("base64")]) {
      const err = (() => {
        try {
          kekFromEnv({ GATEWAY_KEK: value });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(KekError);
      if (value) expect(String(err)).not.toContain(value);
    }
  });
});

describe("loadOrCreateFileKek", () => {
  const dirs: string[] = [];
  const newDir = async () => {
    const d = await mkdtemp(join(tmpdir(), "byok-kek-"));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("generates the key once with mode 0600 and reuses it", async () => {
    const dir = await newDir();
    const first = await loadOrCreateFileKek(join(dir, "data"));
    const path = join(dir, "data", KEK_FILE);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await readFile(path)).length).toBe(32);
    const sealed = await first.encrypt(enc("sk-x"), enc("a"));
    const again = await loadOrCreateFileKek(join(dir, "data"));
    expect(dec(await again.decrypt(sealed, enc("a")))).toBe("sk-x");
  });

  it("agrees on one key when several processes start together", async () => {
    const dir = await newDir();
    const keks = await Promise.all(Array.from({ length: 5 }, () => loadOrCreateFileKek(dir)));
    const sealed = await keks[0]!.encrypt(enc("v"), enc("a"));
    for (const k of keks) expect(dec(await k.decrypt(sealed, enc("a")))).toBe("v");
  });

  it("refuses a key file readable by others or of the wrong size", async () => {
    const dir = await newDir();
    await loadOrCreateFileKek(dir);
    await chmod(join(dir, KEK_FILE), 0o644);
    await expect(loadOrCreateFileKek(dir)).rejects.toMatchObject({ code: "bad_key" });
    const dir2 = await newDir();
    await writeFile(join(dir2, KEK_FILE), randomBytes(10), { mode: 0o600 });
    await expect(loadOrCreateFileKek(dir2)).rejects.toMatchObject({ code: "bad_key" });
  });
});
