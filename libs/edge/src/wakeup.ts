/**
 * A level-triggered wake-up: notify() before wait() is not lost. Used by RunSSE readers, which
 * clear it, read, and wait only if the read found nothing.
 */
export class Wakeup {
  private pending = false;
  private resolve: ((woke: boolean) => void) | undefined;

  notify(): void {
    this.pending = true;
    const r = this.resolve;
    this.resolve = undefined;
    r?.(true);
  }

  clear(): void {
    this.pending = false;
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
