import type { RequestRef, RunPrincipal } from "@byok/bus";
import type { RunError, CredentialsSource, ProviderKind, Usage } from "@byok/protocol";
import type { AttemptOutcome } from "@byok/store";

/** One provider attempt, as metering sees it. Holds no secrets and no content. */
export interface AttemptInfo {
  ref: RequestRef;
  generation: number;
  /**
   * The run owner's fencing epoch: its ledger row is refused once another worker claimed the
   * run. Absent for attempts outside a run (the compatible endpoints).
   */
  epoch?: number;
  conversationId: string;
  modelCallId: string;
  attempt: number;
  principal: RunPrincipal;
  /** The Cursor model id the run asked for (the route). */
  modelId: string;
  provider: ProviderKind;
  upstreamModel: string;
  credentialsSource: CredentialsSource;
  /** Rough size of the prompt, for the reservation. */
  estimatedInputTokens: number;
  maxOutputTokens: number | undefined;
}


export interface AttemptResult {
  outcome: AttemptOutcome;
  /** Exact where the provider reported it, else an estimate (`estimated: true`). */
  usage: Usage;
  ttftMs: number | undefined;
  /** The gateway's own share of the time to first token, microseconds (LedgerEntry.ttftOverheadUs); undefined when not measured. */
  ttftOverheadUs: number | undefined;
  durationMs: number;
}

/**
 * `ticket` is the meter's own record of the admission (its budget lease): plain data (JSON),
 * because the engine keeps it in the run snapshot and the worker that takes the run over
 * passes it to `settleAttempt`.
 */
export type Admission = { ok: true; ticket: unknown } | { ok: false; error: RunError };

/**
 * Metering hooks of the run engine (tenancy issue): rate limits when a run starts, a budget
 * reservation before every provider attempt, and the ledger row + settlement after it.
 * `settle` is called for every admitted attempt, whatever ended it: by its owner, or, for an
 * attempt cut by a takeover, by the new owner with the ticket from the snapshot (the meter
 * settles each ticket's budget at most once).
 */
export interface RunMeter {
  /** Refusals (a rate limit) are recorded by the meter itself (docs/dashboard.md "Refusals"). */
  admitRun(ref: RequestRef, principal: RunPrincipal, modelId?: string): Promise<{ ok: true } | { ok: false; error: RunError }>;
  /** Refusals (an exhausted budget) are recorded by the meter itself. */
  admitAttempt(a: AttemptInfo): Promise<Admission>;
  settleAttempt(a: AttemptInfo, ticket: unknown, r: AttemptResult): Promise<void>;
  /** Records a request refused before the meter saw it: its model has no route. Never throws. */
  unknownModel(ref: RequestRef, principal: RunPrincipal, modelId: string): Promise<void>;
}

/** Embedded default until tenancy is configured: admits everything, records nothing. */
export const UNMETERED: RunMeter = {
  admitRun: async () => ({ ok: true }),
  admitAttempt: async () => ({ ok: true, ticket: undefined }),
  settleAttempt: async () => {},
  unknownModel: async () => {},
};
