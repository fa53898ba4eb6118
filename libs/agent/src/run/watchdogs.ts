import type { Unsubscribe } from "@byok/bus";
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
 * The conversation checks: an expired or taken shared prewarm and a superseding run each
 * become an event.
 */
async function checkConversation(ctx: RunContext): Promise<void> {
  // A prewarm taken by another request of its conversation (or expired) ends with {}; the
  // run's own run_request withdraws it too, and that must not end it.
  const prewarm = ctx.state.prewarm;
  if (prewarm?.conversationId && isAwaitingRun(ctx.state) && !ctx.runRequestArrived && !(await ctx.deps.bus.hasPrewarm(ctx.ref.tenantId, prewarm.conversationId))) {
    ctx.push({ type: "prewarm_expired" });
  }
  await checkSuperseded(ctx);
}

/**
 * The reader check: the reconnect grace after the last reader left becomes `reader_gone`.
 * Returns when the grace ends if no reader is there and it has not ended yet (the caller
 * checks again then).
 */
async function checkReaders(ctx: RunContext): Promise<number | undefined> {
  const p = await ctx.deps.bus.readerPresence(ctx.ref);
  if (p.readers > 0) return undefined;
  const graceEndsAt = (p.lastLeftAt ?? ctx.startedAt) + ctx.deps.timers.reconnectGraceMs;
  if (Date.now() > graceEndsAt) {
    ctx.push({ type: "reader_gone" });
    return undefined;
  }
  return graceEndsAt;
}

/** The conversation whose wake-ups matter to the run: its marked run's, else its prewarm's. */
function watchedConversation(ctx: RunContext): string | undefined {
  const run = ctx.state.run;
  if (run && ctx.conversationMarked) return run.conversationId;
  return ctx.state.prewarm?.conversationId || undefined;
}

/**
 * Starts the watchdog; returns its stop. Driven by bus wake-ups (docs/architecture.md
 * "Presence and supersede"): the last reader leaving, a run marking itself current in the
 * run's conversation, its shared prewarm taken. Each wake-up runs one check (coalesced); a
 * check that finds no reader sets a timer for the end of the grace. Wake-ups are not durable
 * (a crashed ingress's readers expire silently, a message can be lost in an outage), so a slow
 * poll every `presenceCheckMs` checks as well.
 */
export function startWatchdogs(ctx: RunContext): () => void {
  const { bus } = ctx.deps;
  let stopped = false;
  let graceTimer: NodeJS.Timeout | undefined;
  let conversation: { id: string; stop: Unsubscribe } | undefined;

  /** A check that runs one at a time; a call meanwhile runs it once more afterwards. */
  const coalesced = (task: () => Promise<void>): (() => void) => {
    let running = false;
    let again = false;
    const run = (): void => {
      if (stopped || isEnded(ctx.state)) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      void task()
        .catch((err: unknown) => ctx.log.warn({ err }, "reader presence check failed"))
        .finally(() => {
          running = false;
          if (again) {
            again = false;
            run();
          }
        });
    };
    return run;
  };

  const readers: () => void = coalesced(async () => {
    const graceEndsAt = await checkReaders(ctx);
    if (graceEndsAt === undefined || stopped) return;
    clearTimeout(graceTimer);
    graceTimer = setTimeout(readers, Math.max(0, graceEndsAt - Date.now()) + 1);
    graceTimer.unref();
  });
  const conversationCheck = coalesced(() => checkConversation(ctx));

  // Follows the conversation the run cares about; whether it changed is known after the effects
  // that mark the run or share its prewarm (they call ctx.conversationChanged).
  const follow = (): void => {
    const id = watchedConversation(ctx);
    if (id === conversation?.id) return;
    conversation?.stop();
    conversation = id === undefined ? undefined : { id, stop: bus.watchConversation(ctx.ref.tenantId, id, conversationCheck) };
  };
  // A mark or a take between the effect and the subscription sent its wake-up to no one: a new
  // watch calls its check once live (the Bus contract), which sees it.
  ctx.conversationChanged = () => {
    if (!stopped) follow();
  };

  // The first checks are the watches' own first calls, once live: nothing between a check and
  // the wake-ups is missed.
  const stopReaders = bus.watchReaders(ctx.ref, readers);
  follow();
  const poll = setInterval(() => {
    conversationCheck();
    readers();
  }, ctx.deps.timers.presenceCheckMs);
  poll.unref();
  return () => {
    stopped = true;
    clearInterval(poll);
    clearTimeout(graceTimer);
    stopReaders();
    conversation?.stop();
    ctx.conversationChanged = () => undefined;
  };
}
