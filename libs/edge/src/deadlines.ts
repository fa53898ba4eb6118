/** Something with a deadline in a Deadlines heap: `due` (ms, Date.now clock) and its slot, -1 when not scheduled. */
export interface Due {
  due: number;
  slot: number;
  /** Called once `due` has passed (the entry is unscheduled first). */
  expire(): void;
}

/**
 * Deadlines of many waiting entries behind ONE timer: an indexed binary min-heap by `due`, the
 * timer set for its earliest entry. A waiting RunSSE stream is an entry here instead of a
 * setTimeout of its own (a Timeout object and its closure per stream); entries come, move and
 * leave in O(log n) and fire at the same moment their own timer would have.
 */
export class Deadlines {
  private readonly heap: Due[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  get size(): number {
    return this.heap.length;
  }

  /** Schedules `e` at `due` (moving it when already scheduled). */
  schedule(e: Due, due: number): void {
    e.due = due;
    if (e.slot < 0) {
      e.slot = this.heap.length;
      this.heap.push(e);
    }
    this.up(e.slot);
    this.down(e.slot);
    this.arm();
  }

  /** Takes `e` out (nothing when it is not scheduled). */
  cancel(e: Due): void {
    const i = e.slot;
    if (i < 0) return;
    e.slot = -1;
    const last = this.heap.pop()!;
    if (last !== e) {
      this.heap[i] = last;
      last.slot = i;
      this.up(i);
      this.down(last.slot);
    }
    // The timer stays armed for an earlier time: it fires, finds nothing due and re-arms.
    if (this.heap.length === 0) this.disarm();
  }

  private arm(): void {
    const top = this.heap[0];
    if (!top || top.due >= this.timerAt) return;
    this.disarm();
    this.timerAt = top.due;
    this.timer = setTimeout(() => this.fire(), Math.max(0, top.due - Date.now()));
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    for (let top = this.heap[0]; top && top.due <= now; top = this.heap[0]) {
      this.cancel(top);
      try {
        top.expire();
      } catch {
        // An entry's failure is its own (expire handles its errors); the others still fire.
      }
    }
    this.arm();
  }

  private up(i: number): void {
    const h = this.heap;
    const e = h[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = h[p]!;
      if (parent.due <= e.due) break;
      h[i] = parent;
      parent.slot = i;
      i = p;
    }
    h[i] = e;
    e.slot = i;
  }

  private down(i: number): void {
    const h = this.heap;
    const n = h.length;
    const e = h[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && h[r]!.due < h[l]!.due ? r : l;
      const child = h[c]!;
      if (child.due >= e.due) break;
      h[i] = child;
      child.slot = i;
      i = c;
    }
    h[i] = e;
    e.slot = i;
  }
}
