/** Embedded mode: a KEK generated once into the data dir, readable by its owner only. */
import { randomBytes } from "node:crypto";
import { chmod, link, mkdir, open, readFile, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { createAesGcmKek } from "./aes-gcm.js";
import { KekError, type KeyEncryptionKey } from "./kek.js";

export const KEK_FILE = "gateway-kek.key";

/**
 * Loads `<dataDir>/gateway-kek.key` (32 raw bytes), creating it with mode 0600 when absent
 * (atomically, so two processes starting together agree on one key). Refuses a file
 * of the wrong length, or one readable by group or others. Version 1.
 */
export async function loadOrCreateFileKek(dataDir: string): Promise<KeyEncryptionKey> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, KEK_FILE);
  // Written whole to a private temp file, then hard-linked into place: link() fails with
  // EEXIST if another process won, so no reader ever sees a partial key and all agree on one.
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const handle = await open(tmp, "wx", 0o600);
  try {
    await handle.writeFile(randomBytes(32));
    await handle.sync();
    await handle.close();
    // The umask cannot widen 0600, but be explicit for filesystems that ignore the mode.
    await chmod(tmp, 0o600);
    await link(tmp, path).catch((e: unknown) => {
      if (!(e instanceof Error && "code" in e && e.code === "EEXIST")) throw e;
    });
  } finally {
    await handle.close().catch(() => {});
    await unlink(tmp).catch(() => {});
  }
  const mode = (await stat(path)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new KekError("bad_key", `${path} has mode ${mode.toString(8)}: it must not be readable by group or others (chmod 600)`);
  }
  const key = await readFile(path);
  if (key.length !== 32) throw new KekError("bad_key", `${path} must hold 32 bytes, holds ${key.length}`);
  try {
    return createAesGcmKek(key, 1);
  } finally {
    key.fill(0);
  }
}
