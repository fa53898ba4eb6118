/**
 * Connect streaming envelopes: `[flags:u8][length:u32 big-endian][payload]`.
 * Flag bits: 0x01 compressed, 0x02 end-stream; the others are reserved.
 * Pure functions over bytes; no I/O.
 */
export const ENVELOPE_FLAG_COMPRESSED = 0x01;
export const ENVELOPE_FLAG_END_STREAM = 0x02;
export const ENVELOPE_HEADER_BYTES = 5;

export interface Envelope {
  flags: number;
  data: Uint8Array;
}

export function encodeEnvelope(flags: number, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(ENVELOPE_HEADER_BYTES + data.byteLength);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, data.byteLength, false);
  out.set(data, ENVELOPE_HEADER_BYTES);
  return out;
}

/**
 * Incremental envelope reader: push chunks as they arrive, take whole envelopes out.
 * `maxPayloadBytes` bounds what a peer can make us buffer for one envelope.
 */
export class EnvelopeReader {
  private buf = new Uint8Array(0);

  constructor(private readonly maxPayloadBytes = 64 * 1024 * 1024) {}

  push(chunk: Uint8Array): Envelope[] {
    const merged = new Uint8Array(this.buf.byteLength + chunk.byteLength);
    merged.set(this.buf, 0);
    merged.set(chunk, this.buf.byteLength);
    this.buf = merged;
    const out: Envelope[] = [];
    for (;;) {
      if (this.buf.byteLength < ENVELOPE_HEADER_BYTES) break;
      const len = new DataView(this.buf.buffer, this.buf.byteOffset).getUint32(1, false);
      if (len > this.maxPayloadBytes) throw new Error(`envelope of ${len} bytes exceeds the limit of ${this.maxPayloadBytes}`);
      if (this.buf.byteLength < ENVELOPE_HEADER_BYTES + len) break;
      out.push({ flags: this.buf[0]!, data: this.buf.slice(ENVELOPE_HEADER_BYTES, ENVELOPE_HEADER_BYTES + len) });
      this.buf = this.buf.slice(ENVELOPE_HEADER_BYTES + len);
    }
    return out;
  }

  /** Bytes received that do not yet form a whole envelope. */
  get pendingBytes(): number {
    return this.buf.byteLength;
  }
}
