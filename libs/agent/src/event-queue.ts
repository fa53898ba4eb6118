/**
 * The run's mailbox: every input (client messages, model events, timers) is queued here and
 * handled one at a time, so the state machine never sees two events at once.
 */
export class EventQueue<T> {
  private items: T[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;
  /** A take() is owed a return with nothing new (nudge). */
  private nudged = false;
  /** Items taken so far (every item pushed before the n-th take is among the first `taken`). */
  private takenCount = 0;

  /** How many items were pushed so far (queued or taken). */
  get pushed(): number {
    return this.takenCount + this.items.length;
  }

  /** How many items wait for the next take. */
  get size(): number {
    return this.items.length;
  }

  /** How many items were taken so far. */
  get taken(): number {
    return this.takenCount;
  }

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /**
   * Takes every queued item, waiting until at least one is there; [] once closed; undefined
   * when `timeoutMs` is given and passed with nothing queued, or when nudged with nothing queued.
   */
  async take(timeoutMs?: number): Promise<T[] | undefined> {
    if (this.nudged && this.items.length === 0 && !this.closed) {
      this.nudged = false;
      return undefined;
    }
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
      if (this.nudged) {
        this.nudged = false;
        return undefined;
      }
      await new Promise<void>((r) => (this.waiter = r));
    }
    this.nudged = false;
    const out = this.items;
    this.items = [];
    this.takenCount += out.length;
    return out;
  }

  /**
   * Wakes the taker without an item: its take() (the current one, or the next if none waits)
   * returns undefined when nothing is queued, as when a timeout passes.
   */
  nudge(): void {
    this.nudged = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  close(): void {
    this.closed = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
