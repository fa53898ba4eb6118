import { register as globalRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMetrics, metricsHandler } from "../src/index.js";

describe("createMetrics", () => {
  it("exposes the catalogue on its own registry", async () => {
    const m = createMetrics();
    m.bidiAppends.inc({ outcome: "accepted" });
    m.runSseOpen.inc();
    m.runSseStreams.inc({ end_code: "ok" });
    m.framesDelivered.inc(3);
    m.runsStarted.inc({ outcome: "started" });
    m.runsEnded.inc({ outcome: "ok" });
    m.providerAttempts.inc({ provider: "openai", outcome: "ok" });
    m.providerTtft.observe({ provider: "openai" }, 0.4);
    m.tokens.inc({ provider: "openai", kind: "input" }, 120);
    m.busOps.inc({ op: "append_output" });
    const text = await m.metrics();
    for (const name of [
      'byok_bidi_appends_total{outcome="accepted"} 1',
      "byok_run_sse_open 1",
      'byok_run_sse_streams_total{end_code="ok"} 1',
      "byok_frames_delivered_total 3",
      'byok_runs_started_total{outcome="started"} 1',
      'byok_runs_ended_total{outcome="ok"} 1',
      'byok_provider_attempts_total{provider="openai",outcome="ok"} 1',
      'byok_provider_ttft_seconds_count{provider="openai"} 1',
      'byok_tokens_total{provider="openai",kind="input"} 120',
      'byok_bus_ops_total{op="append_output"} 1',
      "byok_process_cpu_user_seconds_total",
    ]) expect(text).toContain(name);
    expect(await globalRegistry.metrics()).not.toContain("byok_");
  });

  it("two instances do not collide and the handler serves text exposition", async () => {
    const a = createMetrics({ processMetrics: false });
    const b = createMetrics({ processMetrics: false });
    a.framesDelivered.inc();
    const res = await metricsHandler(b)();
    expect(res.status).toBe(200);
    expect(res.contentType).toContain("text/plain");
    expect(res.body).toContain("byok_frames_delivered_total 0");
  });
});
