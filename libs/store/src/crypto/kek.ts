/**
 * The key-encryption key (KEK) that seals tenant-held provider credentials. A KMS, an HSM
 * or a local key can implement it; the store only sees sealed bytes.
 */

/** AES-256-GCM output (or a KMS's equivalent): all three parts are needed to open it. */
export interface SealedSecret {
  ciphertext: Uint8Array;
  /** 12-byte nonce, fresh per encryption. */
  iv: Uint8Array;
  /** 16-byte GCM authentication tag. */
  tag: Uint8Array;
  /** Version of the key that sealed it (recorded per row, for rotation). */
  keyVersion: number;
}

export interface KeyEncryptionKey {
  /** Version stamped on everything this key seals. */
  readonly version: number;
  /**
   * Encrypts and authenticates `plain`, binding `aad` (additional authenticated data, e.g.
   * tenant and ref) so a sealed value moved to another row no longer opens.
   */
  encrypt(plain: Uint8Array, aad: Uint8Array): Promise<SealedSecret>;
  /**
   * Opens a value sealed by `encrypt` with the same `aad`. Rejects with KekError when the
   * key version differs, or the ciphertext, tag or aad were altered. Never includes key or
   * plaintext material in the error.
   */
  decrypt(sealed: SealedSecret, aad: Uint8Array): Promise<Uint8Array>;
}

export type KekErrorCode = "bad_key" | "wrong_key_version" | "decrypt_failed";

/** A KEK could not be built or could not open a value. Message never holds key material. */
export class KekError extends Error {
  readonly code: KekErrorCode;
  constructor(code: KekErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "KekError";
    this.code = code;
  }
}
