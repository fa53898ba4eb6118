// The one reader of client request messages on the edge: unary bodies and streaming envelopes
// (connect-node's procedures, AgentService/Run, RunSSE) are checked, decompressed (bounded) and
// decoded here, once, each failure a ConnectError in the protocol's words.
import { fromBinary, fromJsonString, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { Compression } from "@connectrpc/connect/protocol";
import { ENVELOPE_FLAG_COMPRESSED, ENVELOPE_HEADER_BYTES } from "@byok/wire";
import { invalidArgument, resourceExhausted } from "./errors.js";

/** The encodings a client may compress requests with (zlib's async API: off the event loop). */
export const COMPRESSIONS: Compression[] = [compressionGzip, compressionBrotli];

export interface MessageRules<Desc extends DescMessage = DescMessage> {
  input: Desc;
  binary: boolean;
  compression: Compression | undefined;
  readMaxBytes: number;
  /** The procedure as messages name it (`agent.v1.AgentService/Run`). */
  procedure: string;
}

export interface DecodedMessage<Desc extends DescMessage> {
  /** The decompressed bytes that decoded. */
  bytes: Uint8Array;
  message: MessageShape<Desc>;
}

/** The compression the request's `headerName` names: undefined for none; refused when unknown. */
export function requestCompression(header: Headers, headerName: string): Compression | undefined {
  const encoding = header.get(headerName)?.trim().toLowerCase() ?? "identity";
  if (encoding === "identity") return undefined;
  const compression = COMPRESSIONS.find((c) => c.name === encoding);
  if (!compression) throw invalidArgument(`${headerName} '${clip(encoding)}' is not supported; send gzip, br or an uncompressed body.`);
  return compression;
}

/** Decompresses (bounded, asynchronously) and decodes one message. */
export async function decodeMessage<Desc extends DescMessage>(raw: Uint8Array, m: MessageRules<Desc>): Promise<DecodedMessage<Desc>> {
  let bytes = raw;
  if (m.compression) {
    try {
      bytes = await m.compression.decompress(raw, m.readMaxBytes);
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.ResourceExhausted) {
        throw resourceExhausted(`The ${m.procedure} message decompresses to more than ${m.readMaxBytes} bytes, the limit.`);
      }
      throw invalidArgument(`The ${m.procedure} message is not valid ${m.compression.name} data.`);
    }
  }
  if (bytes.byteLength > m.readMaxBytes) {
    throw resourceExhausted(`The ${m.procedure} message is ${bytes.byteLength} bytes; the limit is ${m.readMaxBytes} bytes.`);
  }
  if (m.binary) {
    try {
      return { bytes, message: fromBinary(m.input, bytes) };
    } catch {
      throw invalidArgument(`The ${m.procedure} message is not a valid ${m.input.typeName} in binary protobuf encoding.`);
    }
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidArgument(`The ${m.procedure} message is not UTF-8 JSON.`);
  }
  try {
    return { bytes, message: fromJsonString(m.input, text, { ignoreUnknownFields: true }) };
  } catch (err) {
    throw invalidArgument(`The ${m.procedure} message is not a valid ${m.input.typeName} in JSON${jsonProblem(err, text)}.`);
  }
}

/** Which field is wrong, in the protocol's names (never the decoder's own wording). */
function jsonProblem(err: unknown, text: string): string {
  try {
    JSON.parse(text);
  } catch {
    return ": the body is not JSON";
  }
  const field = /cannot decode field ([\w.]+) from JSON/.exec(String((err as Error).message))?.[1];
  return field ? `: field ${field.split(".").pop()} has a value of the wrong type` : "";
}

/**
 * A streaming request body read envelope by envelope: flags, lengths, decompression and
 * decoding checked, each failure a ConnectError the stream ends with. Yields each message
 * decoded, with its decompressed bytes. At most one envelope of `readMaxBytes` is buffered.
 */
export async function* checkedEnvelopes<Desc extends DescMessage>(body: AsyncIterable<Uint8Array>, m: MessageRules<Desc>): AsyncGenerator<DecodedMessage<Desc>> {
  let buf: Buffer = Buffer.alloc(0);
  for await (const chunk of body) {
    buf = buf.byteLength === 0 ? Buffer.from(chunk) : Buffer.concat([buf, chunk]);
    while (buf.byteLength >= ENVELOPE_HEADER_BYTES) {
      const flags = buf[0]!;
      const len = buf.readUInt32BE(1);
      if (flags & ~ENVELOPE_FLAG_COMPRESSED) {
        throw invalidArgument(`A request envelope of ${m.procedure} has flags 0x${flags.toString(16)}; a client sends only 0x00 or 0x01 (compressed).`);
      }
      if (len > m.readMaxBytes) {
        throw resourceExhausted(`A request message of ${m.procedure} is ${len} bytes; the limit is ${m.readMaxBytes} bytes.`);
      }
      if (buf.byteLength < ENVELOPE_HEADER_BYTES + len) break;
      const payload = buf.subarray(ENVELOPE_HEADER_BYTES, ENVELOPE_HEADER_BYTES + len);
      buf = buf.subarray(ENVELOPE_HEADER_BYTES + len);
      if (flags & ENVELOPE_FLAG_COMPRESSED && !m.compression) {
        throw invalidArgument(`A compressed request envelope of ${m.procedure} needs connect-content-encoding: gzip (or br).`);
      }
      yield await decodeMessage(payload, flags & ENVELOPE_FLAG_COMPRESSED ? m : { ...m, compression: undefined });
    }
  }
  if (buf.byteLength > 0) {
    throw invalidArgument(`The ${m.procedure} request stream ended inside an envelope (${buf.byteLength} bytes left over).`);
  }
}

export function clip(s: string): string {
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}
