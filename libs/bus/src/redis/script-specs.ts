// Typed specs of the scripts in ./lua (each script's header is the authoritative description).
import { replyArray, replyBytes, replyInt, replyString, type ScriptSpec } from "@byok/redis";

const lua = (file: string): URL => new URL(`./lua/${file}`, import.meta.url);

export type AppendInputReply =
  | { status: "accepted"; generation: number; startedGeneration: boolean }
  | { status: "buffered" | "duplicate" | "input_full"; generation: number }
  | { status: "beyond_window"; generation: number; nextSeqno: bigint };

export const appendInputScript: ScriptSpec<"seq" | "base", "seqno" | "payload" | "trace" | "window" | "maxInput" | "seqTtlMs" | "retentionMs" | "channel" | "startsChannel" | "tag" | "startsPublish", AppendInputReply> = {
  command: "byokBusAppendInput",
  lua: lua("append-input.lua"),
  keys: ["seq", "base"],
  args: ["seqno", "payload", "trace", "window", "maxInput", "seqTtlMs", "retentionMs", "channel", "startsChannel", "tag", "startsPublish"],
  rest: false,
  decode(reply) {
    const r = replyArray(reply, this.command);
    const status = replyString(r[0], this.command);
    const generation = replyInt(r[1], this.command);
    switch (status) {
      case "accepted":
        return { status, generation, startedGeneration: replyInt(r[2], this.command) === 1 };
      case "buffered":
      case "duplicate":
      case "input_full":
        return { status, generation };
      case "beyond_window":
        return { status, generation, nextSeqno: BigInt(replyString(r[2], this.command)) };
      default:
        throw new Error(`${this.command}: unknown status ${status}`);
    }
  },
};

export type FencedWriteReply = { ok: true; nextIndex: number } | { ok: false; reason: "fenced" | "ended" | "cap" };

function decodeFencedWrite(reply: unknown, script: string): FencedWriteReply {
  const r = replyArray(reply, script);
  if (replyInt(r[0], script) === 1) return { ok: true, nextIndex: replyInt(r[1], script) };
  const reason = replyString(r[1], script);
  if (reason === "fenced" || reason === "ended" || reason === "cap") return { ok: false, reason };
  throw new Error(`${script}: unknown refusal ${reason}`);
}

export const appendOutputScript: ScriptSpec<"seq" | "epoch" | "end" | "output" | "snapshot", "generation" | "epoch" | "maxOutput" | "channel" | "trace" | "appendedAt" | "snapshot" | "index" | "carried", FencedWriteReply, true> = {
  command: "byokBusAppendOutput",
  lua: lua("append-output.lua"),
  keys: ["seq", "epoch", "end", "output", "snapshot"],
  args: ["generation", "epoch", "maxOutput", "channel", "trace", "appendedAt", "snapshot", "index", "carried"],
  rest: true,
  decode(reply) {
    return decodeFencedWrite(reply, this.command);
  },
};

export const endOutputScript: ScriptSpec<
  "seq" | "epoch" | "end" | "output" | "input" | "buffered" | "snapshot",
  "generation" | "epoch" | "ok" | "present" | "code" | "message" | "details" | "retentionMs" | "seqTtlMs" | "channel",
  FencedWriteReply
> = {
  command: "byokBusEndOutput",
  lua: lua("end-output.lua"),
  keys: ["seq", "epoch", "end", "output", "input", "buffered", "snapshot"],
  args: ["generation", "epoch", "ok", "present", "code", "message", "details", "retentionMs", "seqTtlMs", "channel"],
  rest: false,
  decode(reply) {
    return decodeFencedWrite(reply, this.command);
  },
};

/** nextIndex: frames in the output stream, undefined once the generation ended; snapshot: the live generation's, if saved. */
export type ClaimReply =
  | { ok: true; epoch: number; nextIndex: number | undefined; snapshot: Uint8Array | undefined }
  | { ok: false; reason: "missing" | "expired" };

export const claimScript: ScriptSpec<"seq" | "epoch" | "end" | "output" | "snapshot", "generation", ClaimReply> = {
  command: "byokBusClaim",
  lua: lua("claim.lua"),
  keys: ["seq", "epoch", "end", "output", "snapshot"],
  args: ["generation"],
  rest: false,
  binaryReply: true,
  decode(reply) {
    if (!Array.isArray(reply)) {
      const n = replyInt(reply, this.command);
      if (n === -1) return { ok: false, reason: "missing" };
      if (n === -2) return { ok: false, reason: "expired" };
      throw new Error(`${this.command}: unknown reply ${n}`);
    }
    const next = replyInt(reply[1], this.command);
    const snapshot = replyBytes(reply[2], this.command);
    return { ok: true, epoch: replyInt(reply[0], this.command), nextIndex: next >= 0 ? next : undefined, snapshot: snapshot.byteLength > 0 ? snapshot : undefined };
  },
};

export const saveSnapshotScript: ScriptSpec<"seq" | "epoch" | "end" | "snapshot", "generation" | "epoch" | "snapshot", boolean> = {
  command: "byokBusSaveSnapshot",
  lua: lua("save-snapshot.lua"),
  keys: ["seq", "epoch", "end", "snapshot"],
  args: ["generation", "epoch", "snapshot"],
  rest: false,
  decode(reply) {
    return replyInt(reply, this.command) === 1;
  },
};

export type LatestGenerationReply = { generation: number; ended: boolean } | undefined;

export const latestGenerationScript: ScriptSpec<"seq" | "base", never, LatestGenerationReply> = {
  command: "byokBusLatestGeneration",
  lua: lua("latest-generation.lua"),
  keys: ["seq", "base"],
  args: [],
  rest: false,
  decode(reply) {
    const r = replyArray(reply, this.command);
    if (r.length === 0) return undefined;
    return { generation: replyInt(r[0], this.command), ended: replyInt(r[1], this.command) === 1 };
  },
};

export const readerAddScript: ScriptSpec<"readers", "readerId" | "ttlMs" | "lingerMs", number> = {
  command: "byokBusReaderAdd",
  lua: lua("reader-add.lua"),
  keys: ["readers"],
  args: ["readerId", "ttlMs", "lingerMs"],
  rest: false,
  decode(reply) {
    return replyInt(reply, this.command);
  },
};

export const readerRemoveScript: ScriptSpec<"readers" | "left", "readerId" | "lingerMs" | "channel", boolean> = {
  command: "byokBusReaderRemove",
  lua: lua("reader-remove.lua"),
  keys: ["readers", "left"],
  args: ["readerId", "lingerMs", "channel"],
  rest: false,
  decode(reply) {
    return replyInt(reply, this.command) === 1;
  },
};

export const readerPresenceScript: ScriptSpec<"readers" | "left", never, { readers: number; lastLeftAt: number | undefined }> = {
  command: "byokBusReaderPresence",
  lua: lua("reader-presence.lua"),
  keys: ["readers", "left"],
  args: [],
  rest: false,
  decode(reply) {
    const r = replyArray(reply, this.command);
    const left = replyString(r[1], this.command);
    return { readers: replyInt(r[0], this.command), lastLeftAt: left === "" ? undefined : Number(left) };
  },
};

export const markConversationRunScript: ScriptSpec<"mark", "runKey" | "ttlMs" | "channel", void> = {
  command: "byokBusMarkConversationRun",
  lua: lua("mark-conversation-run.lua"),
  keys: ["mark"],
  args: ["runKey", "ttlMs", "channel"],
  rest: false,
  decode(reply) {
    replyInt(reply, this.command);
  },
};

export const ALL_SCRIPTS = [
  appendInputScript, appendOutputScript, endOutputScript, claimScript, saveSnapshotScript,
  latestGenerationScript, readerAddScript, readerRemoveScript, readerPresenceScript, markConversationRunScript,
] as const;
