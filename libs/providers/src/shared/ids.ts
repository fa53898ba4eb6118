import { createHash } from "node:crypto";

/** Characters every supported API accepts in a call id (Anthropic's tool_use id is the strictest: `^[a-zA-Z0-9_-]+$`). */
const SAFE = /[^A-Za-z0-9_-]/g;
const MAX_ID = 64;
/** Room left for `_<attempt>_<kind><index>` after the base. */
const MAX_BASE = 40;

/**
 * The namespace of one attempt of one model call: `<modelCallId>_<attempt>`, with the model
 * call id reduced to safe characters (or a hash when long) so every id built on it stays
 * within 64 characters and the character set all providers accept.
 */
export function attemptNamespace(modelCallId: string, attempt: number): string {
  let base = modelCallId.replace(SAFE, "_");
  if (base.length > MAX_BASE || base.length === 0) {
    base = `h${createHash("sha256").update(modelCallId).digest("hex").slice(0, 24)}`;
  }
  return `${base}_${attempt}`;
}

export type OutputIdKind = "msg" | "rs" | "tc";

/**
 * A gateway id for the `index`-th output item of one kind in one attempt. Tool-call ids made
 * here are sent back to the provider as call ids, so they are unique per conversation (model
 * call + attempt + index) and at most 64 characters of `[A-Za-z0-9_-]`.
 */
export function outputItemId(modelCallId: string, attempt: number, kind: OutputIdKind, index: number): string {
  const id = `${attemptNamespace(modelCallId, attempt)}_${kind}${index}`;
  return id.length <= MAX_ID ? id : id.slice(id.length - MAX_ID);
}

/** Allocates item ids for one pass, counting each kind separately. */
export class ItemIds {
  private readonly counts: Record<OutputIdKind, number> = { msg: 0, rs: 0, tc: 0 };
  constructor(
    private readonly modelCallId: string,
    private readonly attempt: number,
  ) {}
  next(kind: OutputIdKind): string {
    const n = this.counts[kind]++;
    return outputItemId(this.modelCallId, this.attempt, kind, n);
  }
}
