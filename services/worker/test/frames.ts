// Helpers of the fault tests: the output stream read with XRANGE, and frame descriptions.
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Redis } from "ioredis";
import { requestKeys, runJobId, type RequestRef } from "@byok/bus";
import { AgentServerMessageSchema, type AgentServerMessage } from "@byok/wire";
import { Queue } from "bullmq";

/** `text:<t>`, `notice:<t>`, or the message case, for readable assertions. */
export function describeFrame(m: AgentServerMessage): string {
  if (m.message.case !== "interactionUpdate") return String(m.message.case);
  const u = m.message.value.message;
  if (u.case === "textDelta") return `${u.value.isServerNotice ? "notice" : "text"}:${u.value.text.trim()}`;
  return String(u.case);
}

export function isText(m: AgentServerMessage): boolean {
  return m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" && !m.message.value.message.value.isServerNotice;
}

/**
 * The client-visible text after the first server notice (the re-run pass), joined: consecutive
 * deltas may arrive merged into one frame (delta coalescing), so tests compare text, not frames.
 */
export function textAfterNotice(messages: readonly AgentServerMessage[]): string {
  const noticeAt = messages.findIndex((m) => describeFrame(m).startsWith("notice:"));
  return messages
    .slice(noticeAt + 1)
    .filter(isText)
    .map((m) => (m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" ? m.message.value.message.value.text : ""))
    .join("");
}

/** Every frame of a generation's output stream, read with XRANGE (field `f`; the end marker, field `e`, is last). */
export async function xrangeFrames(redis: Redis, keyPrefix: string, ref: RequestRef, generation: number): Promise<Uint8Array[]> {
  const key = requestKeys(keyPrefix, ref).generation(generation).output;
  const entries = await redis.xrangeBuffer(key, "-", "+");
  const field = (fields: Buffer[], name: string) => {
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i]!.toString() === name) return fields[i + 1]!;
    return undefined;
  };
  if (entries.slice(0, -1).some(([, fields]) => field(fields, "e"))) throw new Error("end marker before the last entry");
  return entries.filter(([, fields]) => !field(fields, "e")).map(([, fields]) => {
    const f = field(fields, "f");
    if (!f) throw new Error("output entry without a frame");
    return new Uint8Array(f);
  });
}

export function encodeFrames(messages: AgentServerMessage[]): string[] {
  return messages.map((m) => Buffer.from(toBinary(AgentServerMessageSchema, m)).toString("base64"));
}

export function decodeFrames(frames: Uint8Array[]): AgentServerMessage[] {
  return frames.map((f) => fromBinary(AgentServerMessageSchema, f));
}

/** The worker (its connection name) that holds the run job of a generation now. */
export async function jobOwner(redis: Redis, queuePrefix: string, ref: RequestRef, generation: number): Promise<string | undefined> {
  const connection = redis.duplicate();
  const queue = new Queue("runs", { connection, prefix: queuePrefix });
  try {
    const job = await queue.getJob(runJobId(ref, generation));
    if (!job || !(await job.isActive())) return undefined;
    return job.processedBy;
  } finally {
    await queue.close();
    await connection.quit().catch(() => undefined);
  }
}
