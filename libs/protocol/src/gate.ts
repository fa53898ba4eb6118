import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentServerMessageSchema, KvServerMessageSchema, type AgentServerMessage, type ConversationStateStructure } from "@byok/wire";
import { blobKey, type Blob } from "./blobs.js";
import type { EndDecision } from "./errors.js";
import { frames } from "./frames.js";

/**
 * The output gate: frames leave in the order the run produced them, and a checkpoint holds
 * everything behind it until the client has acknowledged every blob it references
 * (docs/protocol.md "Bridges": set_blob_args → set_blob_result, then the checkpoint).
 * KV requests themselves pass at once (the client must see them to acknowledge). A checkpoint
 * whose acknowledgements do not arrive in time is skipped and what follows it goes on.
 * Pure: every function returns the next gate and the effects to carry out.
 */
export interface OutputGate {
  /** Next KvServerMessage id (uint32, never 0). */
  readonly nextKvId: number;
  /** Blobs the client has (acknowledged, or referenced by its own state). */
  readonly known: ReadonlySet<string>;
  /** set_blob_args sent and not yet answered: kv id → blob key. */
  readonly awaiting: ReadonlyMap<number, string>;
  /** Output held behind an unpublished checkpoint, in order. */
  readonly held: readonly Held[];
  /** Sequence of the last checkpoint that had to wait (timeouts name it). */
  readonly seq: number;
  /** Checkpoints at or below this sequence are skipped (their wait ran out or failed). */
  readonly expiredUpTo: number;
}

type Held =
  | { kind: "checkpoint"; frame: AgentServerMessage; needs: readonly string[]; seq: number }
  | { kind: "frames"; frames: AgentServerMessage[] }
  | { kind: "end"; decision: EndDecision };

export type GateEffect =
  | { type: "emit"; frames: AgentServerMessage[] }
  | { type: "store_blobs"; blobs: Blob[] }
  | { type: "kv_wait"; seq: number }
  | { type: "end"; decision: EndDecision }
  | { type: "log"; level: "info" | "warn"; message: string; fields?: Record<string, unknown> };

export interface GateResult {
  gate: OutputGate;
  effects: GateEffect[];
}

export function openGate(clientBlobs: Iterable<Uint8Array> = []): OutputGate {
  return { nextKvId: 1, known: new Set([...clientBlobs].map(blobKey)), awaiting: new Map(), held: [], seq: 0, expiredUpTo: 0 };
}

/** True while an end is decided but held behind a checkpoint. */
export function endHeld(g: OutputGate): boolean {
  return heldEnd(g) !== undefined;
}

/** The end decision held behind a checkpoint, if any. */
export function heldEnd(g: OutputGate): EndDecision | undefined {
  for (const h of g.held) if (h.kind === "end") return h.decision;
  return undefined;
}

function setBlobFrame(id: number, b: Blob): AgentServerMessage {
  return create(AgentServerMessageSchema, {
    message: {
      case: "kvServerMessage",
      value: create(KvServerMessageSchema, { id, message: { case: "setBlobArgs", value: { $typeName: "agent.v1.SetBlobArgs", blobId: b.id, blobData: b.data } } }),
    },
  });
}

/** Releases held output from the head while it may go. */
function drain(g: OutputGate): GateResult {
  const held = [...g.held];
  const effects: GateEffect[] = [];
  const emit = (f: AgentServerMessage[]) => {
    const last = effects.at(-1);
    if (last?.type === "emit") last.frames.push(...f);
    else effects.push({ type: "emit", frames: [...f] });
  };
  while (held.length) {
    const h = held[0]!;
    if (h.kind === "frames") emit(h.frames);
    else if (h.kind === "end") effects.push({ type: "end", decision: h.decision });
    else if (h.seq <= g.expiredUpTo) effects.push({ type: "log", level: "warn", message: "checkpoint skipped: its blobs were not acknowledged", fields: { seq: h.seq } });
    else if (h.needs.every((k) => g.known.has(k))) emit([h.frame]);
    else break;
    held.shift();
  }
  return { gate: { ...g, held }, effects };
}

/** Frames produced by the run: out at once, or held behind a pending checkpoint. */
export function gateFrames(g: OutputGate, f: AgentServerMessage[]): GateResult {
  if (f.length === 0) return { gate: g, effects: [] };
  if (g.held.length === 0) return { gate: g, effects: [{ type: "emit", frames: f }] };
  return { gate: { ...g, held: [...g.held, { kind: "frames", frames: f }] }, effects: [] };
}

/** The end of the stream: at once, or after the held output. */
export function gateEnd(g: OutputGate, decision: EndDecision): GateResult {
  if (g.held.length === 0) return { gate: g, effects: [{ type: "end", decision }] };
  return { gate: { ...g, held: [...g.held, { kind: "end", decision }] }, effects: [] };
}

/** A checkpoint: sends the blobs the client lacks, then publishes once they are acknowledged. */
export function gateCheckpoint(g: OutputGate, state: ConversationStateStructure, blobs: Blob[]): GateResult {
  const awaiting = new Map(g.awaiting);
  const pendingKeys = new Set(awaiting.values());
  const fresh: Blob[] = [];
  const requests: AgentServerMessage[] = [];
  let nextKvId = g.nextKvId;
  for (const b of blobs) {
    const k = blobKey(b.id);
    if (g.known.has(k) || pendingKeys.has(k)) continue;
    pendingKeys.add(k);
    fresh.push(b);
    awaiting.set(nextKvId, k);
    requests.push(setBlobFrame(nextKvId, b));
    nextKvId = nextKvId >= 0xffffffff ? 1 : nextKvId + 1;
  }
  const needs = blobs.map((b) => blobKey(b.id)).filter((k) => !g.known.has(k));
  const seq = g.seq + 1;
  const effects: GateEffect[] = [];
  if (fresh.length) effects.push({ type: "store_blobs", blobs: fresh }, { type: "emit", frames: requests });
  if (needs.length) effects.push({ type: "kv_wait", seq });
  const next: OutputGate = {
    ...g,
    nextKvId,
    awaiting,
    seq,
    held: [...g.held, { kind: "checkpoint", frame: frames.checkpoint(state), needs, seq }],
  };
  const d = drain(next);
  return { gate: d.gate, effects: [...effects, ...d.effects] };
}

/** `set_blob_result` for kv `id`; an error result fails every waiting checkpoint. Unknown ids are ignored. */
export function gateBlobResult(g: OutputGate, id: number, failed: boolean): GateResult {
  const k = g.awaiting.get(id);
  if (k === undefined) return { gate: g, effects: [] };
  const awaiting = new Map(g.awaiting);
  awaiting.delete(id);
  if (failed) {
    const d = drain({ ...g, awaiting, expiredUpTo: g.seq });
    return { gate: d.gate, effects: [{ type: "log", level: "warn", message: "client failed to store a checkpoint blob" }, ...d.effects] };
  }
  const known = new Set(g.known);
  known.add(k);
  return drain({ ...g, awaiting, known });
}

/** The acknowledgement wait of checkpoint `seq` ran out: skip it (and earlier ones still waiting). */
export function gateTimeout(g: OutputGate, seq: number): GateResult {
  // Already expired, or already released by its acknowledgements (the timer is not cancelled): nothing to do.
  if (seq <= g.expiredUpTo || !g.held.some((h) => h.kind === "checkpoint" && h.seq <= seq)) return { gate: g, effects: [] };
  return drain({ ...g, expiredUpTo: seq });
}

/**
 * After a takeover: what can go goes, and the checkpoints still held wait for their
 * acknowledgements again (the previous owner's timers died with it; a client that never
 * answers must not hold the output behind them for ever).
 */
export function gateResume(g: OutputGate): GateResult {
  const d = drain(g);
  const waits = d.gate.held.flatMap((h) => (h.kind === "checkpoint" && h.seq > d.gate.expiredUpTo ? [{ type: "kv_wait" as const, seq: h.seq }] : []));
  return { gate: d.gate, effects: [...d.effects, ...waits] };
}

/**
 * The gate in the run snapshot (JSON; frames as base64 protobuf). Held output was never
 * appended: without it a new owner would lose what waits behind a checkpoint, such as the
 * exec request of a tool call or the run's end.
 */
export interface GateSnapshot {
  nextKvId: number;
  known: string[];
  awaiting: [number, string][];
  held: HeldSnapshot[];
  seq: number;
  expiredUpTo: number;
}

type HeldSnapshot =
  | { kind: "checkpoint"; frame: string; needs: string[]; seq: number }
  | { kind: "frames"; frames: string[] }
  | { kind: "end"; decision: EndDecision };

const frameB64 = (f: AgentServerMessage) => Buffer.from(toBinary(AgentServerMessageSchema, f)).toString("base64");
const frameOf = (b: string) => fromBinary(AgentServerMessageSchema, new Uint8Array(Buffer.from(b, "base64")));

export function snapshotGate(g: OutputGate): GateSnapshot {
  return {
    nextKvId: g.nextKvId,
    known: [...g.known],
    awaiting: [...g.awaiting],
    held: g.held.map((h): HeldSnapshot => {
      if (h.kind === "checkpoint") return { kind: "checkpoint", frame: frameB64(h.frame), needs: [...h.needs], seq: h.seq };
      if (h.kind === "frames") return { kind: "frames", frames: h.frames.map(frameB64) };
      return h;
    }),
    seq: g.seq,
    expiredUpTo: g.expiredUpTo,
  };
}

export function restoreGate(s: GateSnapshot): OutputGate {
  return {
    nextKvId: s.nextKvId,
    known: new Set(s.known),
    awaiting: new Map(s.awaiting),
    held: s.held.map((h): Held => {
      if (h.kind === "checkpoint") return { kind: "checkpoint", frame: frameOf(h.frame), needs: h.needs, seq: h.seq };
      if (h.kind === "frames") return { kind: "frames", frames: h.frames.map(frameOf) };
      return h;
    }),
    seq: s.seq,
    expiredUpTo: s.expiredUpTo,
  };
}

/** Nobody will acknowledge any more (the reader is gone): release everything without checkpoints. */
export function gateFlushAll(g: OutputGate): GateResult {
  return drain({ ...g, expiredUpTo: g.seq });
}

/** `get_blob_args` requests for blobs the gateway lacks (they pass at once); returns the kv ids used. */
export function gateBlobGets(g: OutputGate, ids: readonly Uint8Array[]): { gate: OutputGate; frames: AgentServerMessage[]; kvIds: Map<number, string> } {
  let nextKvId = g.nextKvId;
  const kvIds = new Map<number, string>();
  const out: AgentServerMessage[] = [];
  for (const blobId of ids) {
    kvIds.set(nextKvId, blobKey(blobId));
    out.push(
      create(AgentServerMessageSchema, {
        message: {
          case: "kvServerMessage",
          value: create(KvServerMessageSchema, { id: nextKvId, message: { case: "getBlobArgs", value: { $typeName: "agent.v1.GetBlobArgs", blobId } } }),
        },
      }),
    );
    nextKvId = nextKvId >= 0xffffffff ? 1 : nextKvId + 1;
  }
  return { gate: { ...g, nextKvId }, frames: out, kvIds };
}
