/**
 * The run's mailbox: every input (client messages, model events, timers) is queued here and
 * handled one at a time, so the state machine never sees two events at once.
 */
export class EventQueue<T> {
  private items: T[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /**
   * Takes every queued item, waiting until at least one is there; [] once closed; undefined
   * when `timeoutMs` is given and passed with nothing queued.
   */
  async take(timeoutMs?: number): Promise<T[] | undefined> {
    if (timeoutMs !== undefined && this.items.length === 0 && !this.closed) {
      const woken = await new Promise<boolean>((r) => {
        const t = setTimeout(() => {
          this.waiter = undefined;
          r(false);
        }, timeoutMs);
        this.waiter = () => {
          clearTimeout(t);
          r(true);
        };
      });
      if (!woken) return undefined;
    }
    while (this.items.length === 0 && !this.closed) {
      await new Promise<void>((r) => (this.waiter = r));
    }
    const out = this.items;
    this.items = [];
    return out;
  }

  close(): void {
    this.closed = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
