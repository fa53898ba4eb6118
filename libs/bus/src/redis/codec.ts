// Stream entry ↔ bus entry mapping. Payloads stay Buffers end to end (never utf8-decoded).
import type { TraceCarrier } from "@byok/telemetry";
import { decodeEntryMeta } from "../entry-meta.js";
import type { CarriedOutput, EndStatus, InputEntry, OutputEntry } from "../types.js";

export type StreamEntry = [id: Buffer, fields: Buffer[]];

export function encodeTrace(trace: TraceCarrier): string {
  return JSON.stringify(trace);
}

export function decodeTrace(raw: Buffer | undefined): TraceCarrier {
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8"));
  } catch {
    return {};
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return {};
  const out: TraceCarrier = {};
  for (const [k, v] of Object.entries(parsed)) if (typeof v === "string") out[k] = v;
  return out;
}

/** Input entry id 0-(index+1) → index. */
export function indexOfInputId(id: Buffer): number {
  const s = id.toString("latin1");
  const dash = s.indexOf("-");
  return Number(s.slice(dash + 1)) - 1;
}

/** The XRANGE start that seeks to input entry `index`. */
export function inputIdOfIndex(index: number): string {
  return `0-${index + 1}`;
}

/**
 * Output entry id (index+1)-(2·epoch+1) → index: the millisecond part is the position, the
 * sequence part the writer's epoch (libs/bus/README.md "Fencing by entry id").
 */
export function indexOfOutputId(id: Buffer): number {
  const s = id.toString("latin1");
  return Number(s.slice(0, s.indexOf("-"))) - 1;
}

/** The XRANGE start that seeks to output entry `index`, whichever epoch wrote it. */
export function outputStartOfIndex(index: number): string {
  return `${index + 1}-0`;
}

/** The id of output entry `index` written by the owner of `epoch`. */
export function outputIdOf(index: number, epoch: number): string {
  return `${index + 1}-${2 * epoch + 1}`;
}

function fieldsOf(fields: Buffer[]): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const k = fields[i];
    const v = fields[i + 1];
    if (k && v) m.set(k.toString("latin1"), v);
  }
  return m;
}

/** A plain Uint8Array copy (the reply Buffer may be a slice of a larger parser buffer). */
function bytes(b: Buffer | undefined): Uint8Array {
  return b ? new Uint8Array(b) : new Uint8Array(0);
}

export function toInputEntry([id, raw]: StreamEntry): InputEntry {
  const f = fieldsOf(raw);
  return {
    index: indexOfInputId(id),
    seqno: BigInt(f.get("s")?.toString("latin1") ?? "0"),
    payload: bytes(f.get("p")),
    meta: decodeEntryMeta(decodeTrace(f.get("t"))),
  };
}

/** An output stream entry: a frame, or the end marker end-output appends after the last frame. */
export function toOutputItem([id, raw]: StreamEntry): { entry: OutputEntry } | { end: EndStatus } {
  const f = fieldsOf(raw);
  if (f.has("e")) return { end: toEndStatus(Object.fromEntries(f))! };
  return { entry: { index: indexOfOutputId(id), frame: bytes(f.get("f")), trace: decodeTrace(f.get("t")), appendedAt: Number(f.get("a")?.toString("latin1") ?? "0") } };
}

/** The end hash (HGETALL, Buffer values) → EndStatus; undefined when the hash is absent. */
export function toEndStatus(hash: Record<string, Buffer>): EndStatus | undefined {
  const ok = hash["ok"];
  if (!ok) return undefined;
  const end: EndStatus = { ok: ok.toString("latin1") === "1" };
  const code = hash["code"];
  const message = hash["message"];
  const details = hash["details"];
  if (code) end.code = code.toString("utf8");
  if (message) end.message = message.toString("utf8");
  if (details) end.errorDetails = bytes(details);
  return end;
}

export function toBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * The wake-up of a lone appended frame, carrying it: "O", generation (u32), index (u32),
 * appended-at (f64 ms), trace length (u32), trace JSON, frame bytes (libs/bus/README.md
 * "Connections and wake-ups"). Any other message is a plain wake-up.
 */
export function encodeCarried(generation: number, index: number, appendedAt: number, trace: string, frame: Uint8Array): Buffer {
  const traceBytes = Buffer.from(trace, "utf8");
  const head = Buffer.allocUnsafe(21);
  head.write("O", 0, "latin1");
  head.writeUInt32BE(generation, 1);
  head.writeUInt32BE(index, 5);
  head.writeDoubleBE(appendedAt, 9);
  head.writeUInt32BE(traceBytes.byteLength, 17);
  return Buffer.concat([head, traceBytes, toBuffer(frame)]);
}

export function decodeCarried(message: Buffer): CarriedOutput | undefined {
  if (message.byteLength < 21 || message[0] !== 0x4f) return undefined;
  const traceEnd = 21 + message.readUInt32BE(17);
  if (traceEnd > message.byteLength) return undefined;
  const entry: OutputEntry = {
    index: message.readUInt32BE(5),
    frame: bytes(message.subarray(traceEnd)),
    trace: decodeTrace(message.subarray(21, traceEnd)),
    appendedAt: message.readDoubleBE(9),
  };
  return { generation: message.readUInt32BE(1), entries: [entry] };
}
