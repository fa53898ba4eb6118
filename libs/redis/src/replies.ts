// Decoders of raw script replies: each names the script in its error, so a script and its spec
// that drift apart fail loudly instead of yielding a wrong value.

export function replyArray(reply: unknown, script: string): unknown[] {
  if (!Array.isArray(reply)) throw new Error(`${script}: unexpected reply ${String(reply)}`);
  return reply;
}

export function replyInt(v: unknown, script: string): number {
  if (typeof v === "number" && Number.isSafeInteger(v)) return v;
  if (typeof v === "string" && /^-?\d+$/.test(v)) return Number(v);
  if (Buffer.isBuffer(v)) return replyInt(v.toString("utf8"), script);
  throw new Error(`${script}: expected an integer, got ${String(v)}`);
}

export function replyString(v: unknown, script: string): string {
  if (typeof v === "string") return v;
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  throw new Error(`${script}: expected a string, got ${String(v)}`);
}

/**
 * A binary value of a script registered with `binaryReply` (its strings arrive as Buffers),
 * copied: the parser's Buffer may be a view of a larger shared one.
 */
export function replyBytes(v: unknown, script: string): Uint8Array {
  if (Buffer.isBuffer(v)) return new Uint8Array(v);
  throw new Error(`${script}: expected bytes (a script with binaryReply), got ${String(v)}`);
}
