/** A KeyEncryptionKey over a raw 32-byte key with node:crypto AES-256-GCM. */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { KekError, type KeyEncryptionKey } from "./kek.js";

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Builds a KEK from 32 raw key bytes (copied; the caller may wipe its buffer). */
export function createAesGcmKek(key: Uint8Array, version = 1): KeyEncryptionKey {
  if (key.length !== KEY_BYTES) throw new KekError("bad_key", `key-encryption key must be ${KEY_BYTES} bytes, got ${key.length}`);
  if (!Number.isInteger(version) || version < 1) throw new KekError("bad_key", "key version must be a positive integer");
  const secret = Buffer.from(key);
  return {
    version,
    async encrypt(plain, aad) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", secret, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad);
      const ciphertext = Buffer.concat([cipher.update(plain), cipher.final()]);
      return { ciphertext: new Uint8Array(ciphertext), iv: new Uint8Array(iv), tag: new Uint8Array(cipher.getAuthTag()), keyVersion: version };
    },
    async decrypt(sealed, aad) {
      if (sealed.keyVersion !== version) {
        throw new KekError("wrong_key_version", `sealed with key version ${sealed.keyVersion}, this key is version ${version}`);
      }
      try {
        const decipher = createDecipheriv("aes-256-gcm", secret, sealed.iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad);
        decipher.setAuthTag(sealed.tag);
        return new Uint8Array(Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]));
      } catch (e) {
        throw new KekError("decrypt_failed", "sealed secret did not authenticate (wrong key, aad or tampered bytes)", { cause: e });
      }
    },
  };
}
