// The edge's settings every in-process edge test shares (short not-found wait, silent logs,
// its own metrics registry); a test passes what it is about: the bus, the dispatcher, the auth.
import { createLogger, createMetrics } from "@byok/telemetry";
import { OpenStreams } from "../open-streams.js";
import type { EdgeDeps } from "../server.js";

export function testEdgeDeps(parts: Pick<EdgeDeps, "bus" | "dispatcher" | "auth">): EdgeDeps {
  return {
    ...parts,
    timers: { heartbeatMs: 60_000, notFoundWaitMs: 200, newGenerationWaitMs: 0, readerTtlMs: 30_000 },
    limits: { maxPayloadBytes: 65_536, readBatchBytes: 4 * 1024 * 1024 },
    logger: createLogger({ service: "test", level: "silent" }),
    metrics: createMetrics(),
    streams: new OpenStreams(100),
  };
}
