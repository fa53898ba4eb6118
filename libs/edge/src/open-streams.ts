import type { ConnectError } from "@connectrpc/connect";
import { overloaded, unavailable } from "./errors.js";

export type Admission = Admitted | { ok: false; error: ConnectError };

/**
 * An admitted stream: `release()` (idempotent) when it ends; `cut` fires when the replica's
 * drain cuts the streams still open. A class, not a closure: every open stream holds one.
 */
export class Admitted {
  readonly ok = true;
  private released = false;

  constructor(
    private readonly onRelease: OpenStreams,
    readonly cut: AbortSignal,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease.released();
  }
}

/**
 * The RunSSE streams a replica has open: admits new ones up to the configured limit (past it,
 * `resource_exhausted` at once, never a hang) and drains them on shutdown — from `drain()` on
 * no new stream is admitted (`unavailable`, retryable: reconnect to another replica), open
 * ones continue for the grace, then the rest are cut so their clients reconnect elsewhere and
 * resume with `x-gateway-resume-after`.
 */
export class OpenStreams {
  private count = 0;
  private draining = false;
  private readonly cutAll = new AbortController();
  private readonly idle = new Set<() => void>();

  constructor(private readonly maxStreams: number) {}

  get open(): number {
    return this.count;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  admit(): Admission {
    if (this.draining) {
      return { ok: false, error: unavailable("This gateway replica is shutting down; reconnect to continue the stream (another replica serves it).") };
    }
    if (this.count >= this.maxStreams) {
      return {
        ok: false,
        error: overloaded(`This gateway replica already serves ${this.maxStreams} RunSSE streams (GATEWAY_MAX_RUN_SSE_STREAMS); retry shortly or on another replica.`),
      };
    }
    this.count++;
    return new Admitted(this, this.cutAll.signal);
  }

  /** One admitted stream ended (Admitted.release, once per stream). */
  released(): void {
    this.count--;
    if (this.count === 0) for (const f of this.idle) f();
  }

  /** Stops admitting, waits up to `graceMs` for open streams to end, then cuts the rest. */
  async drain(graceMs: number): Promise<{ cut: number }> {
    this.draining = true;
    if (this.count > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.idle.delete(done);
          resolve();
        };
        const timer = setTimeout(done, graceMs);
        this.idle.add(done);
      });
    }
    const cut = this.count;
    this.cutAll.abort();
    return { cut };
  }
}
