import { isAwaitingRun, isEnded, isFinishing } from "@byok/protocol";
import type { RunContext } from "./context.js";

/**
 * Once the run marked itself its conversation's current one (the `mark_conversation_run`
 * effect), notices that a newer run of the conversation superseded it.
 */
async function checkSuperseded(ctx: RunContext): Promise<void> {
  const run = ctx.state.run;
  if (!run || !ctx.conversationMarked || isFinishing(ctx.state)) return;
  const current = await ctx.deps.bus.conversationRun(ctx.ref.tenantId, run.conversationId);
  if (current && current !== ctx.runKey) ctx.push({ type: "superseded" });
}

/**
 * The periodic watchdog (every `presenceCheckMs`): an expired shared prewarm, a superseding
 * run, and the reconnect grace after the last reader left each become an event.
 */
export async function checkPresence(ctx: RunContext): Promise<void> {
  if (isEnded(ctx.state)) return;
  try {
    // A prewarm taken by another request of its conversation (or expired) ends with {}.
    const prewarm = ctx.state.prewarm;
    if (prewarm?.conversationId && isAwaitingRun(ctx.state) && !(await ctx.deps.bus.hasPrewarm(ctx.ref.tenantId, prewarm.conversationId))) {
      ctx.push({ type: "prewarm_expired" });
    }
    await checkSuperseded(ctx);
    const p = await ctx.deps.bus.readerPresence(ctx.ref);
    if (p.readers > 0) return;
    const since = p.lastLeftAt ?? ctx.startedAt;
    if (Date.now() - since > ctx.deps.timers.reconnectGraceMs) ctx.push({ type: "reader_gone" });
  } catch (err) {
    ctx.log.warn({ err }, "reader presence check failed");
  }
}

/** Starts the watchdog; returns its stop. */
export function startWatchdogs(ctx: RunContext): () => void {
  const presence = setInterval(() => void checkPresence(ctx), ctx.deps.timers.presenceCheckMs);
  presence.unref();
  return () => clearInterval(presence);
}
