/** Why a hex payload was refused; callers turn this into an `invalid_argument` message. */
export type HexError = "odd_length" | "non_hex";

/**
 * Decodes a hex string strictly (upper or lower case, no whitespace, no prefix).
 * Returns the bytes, or the reason the text is not hex. Pure; never throws.
 */
export function decodeHex(text: string): Uint8Array | HexError {
  if (text.length % 2 !== 0) return "odd_length";
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = nibble(text.charCodeAt(2 * i));
    const lo = nibble(text.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) return "non_hex";
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export function encodeHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

function nibble(c: number): number {
  if (c >= 48 && c <= 57) return c - 48; // 0-9
  if (c >= 97 && c <= 102) return c - 87; // a-f
  if (c >= 65 && c <= 70) return c - 55; // A-F
  return -1;
}
