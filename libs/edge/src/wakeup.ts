import type { CarriedOutput } from "@byok/bus";

/** Carried output kept between two takes (wake-ups, frame bytes); past it the reader reads instead. */
const MAX_CARRIED = 64;
const MAX_CARRIED_BYTES = 256 * 1024;

/**
 * A level-triggered wake-up: notify() before wait() is not lost. Used by RunSSE readers, which
 * take it (the output the wake-ups carried since), read unless that output is exactly what
 * comes next, and wait only if nothing came.
 */
export class Wakeup {
  private pending = false;
  private carried: CarriedOutput[] = [];
  private carriedBytes = 0;
  private overflowed = false;
  private resolve: ((woke: boolean) => void) | undefined;

  notify(carried?: CarriedOutput): void {
    this.pending = true;
    if (carried && !this.overflowed) {
      this.carriedBytes += carried.entries.reduce((n, e) => n + e.frame.byteLength, 0);
      if (this.carried.length < MAX_CARRIED && this.carriedBytes <= MAX_CARRIED_BYTES) this.carried.push(carried);
      else this.overflow();
    } else if (!carried) this.overflow(); // a wake-up without its output: read
    const r = this.resolve;
    this.resolve = undefined;
    r?.(true);
  }

  clear(): void {
    this.pending = false;
    this.carried = [];
    this.carriedBytes = 0;
    this.overflowed = false;
  }

  /** Drops what was carried (a reader that does not take it must not hold it): only a read is complete. */
  private overflow(): void {
    this.carried = [];
    this.carriedBytes = 0;
    this.overflowed = true;
  }

  /**
   * Clears it and returns what the wake-ups since the last take carried, or undefined when one
   * of them carried nothing (or too many came): then only a read is complete.
   */
  take(): CarriedOutput[] | undefined {
    const carried = this.overflowed ? undefined : this.carried;
    this.clear();
    return carried;
  }

  /** Resolves true on a notification, false after `ms` or when `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve(true);
    }
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const t = setTimeout(() => finish(false), Math.max(0, ms));
      const onAbort = () => finish(false);
      signal.addEventListener("abort", onAbort, { once: true });
      const finish = (v: boolean) => {
        clearTimeout(t);
        signal.removeEventListener("abort", onAbort);
        if (this.resolve === finish) this.resolve = undefined;
        if (v) this.pending = false;
        resolve(v);
      };
      this.resolve = finish;
    });
  }
}
