import { describe, expect, it } from "vitest";
import { Deadlines, type Due } from "./deadlines.js";

const entry = (name: string, fired: string[]): Due & { name: string } => ({
  name,
  due: 0,
  slot: -1,
  expire() {
    fired.push(name);
  },
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Deadlines: many waits behind one timer", () => {
  it("fires each entry once its due time passed, earliest first; moved and cancelled entries keep their place", async () => {
    const fired: string[] = [];
    const d = new Deadlines();
    const now = Date.now();
    const [a, b, c, e, f] = ["a", "b", "c", "e", "f"].map((n) => entry(n, fired));
    d.schedule(c!, now + 400);
    d.schedule(a!, now + 50);
    d.schedule(b!, now + 300);
    d.schedule(e!, now + 60);
    d.schedule(f!, now + 30);
    d.cancel(e!); // gone
    d.cancel(e!); // a second cancel is nothing
    d.schedule(f!, now + 500); // moved later
    expect(d.size).toBe(4);
    await sleep(150);
    expect(fired).toEqual(["a"]);
    d.schedule(a!, now + 350); // an expired entry scheduled again
    await sleep(450);
    expect(fired).toEqual(["a", "b", "a", "c", "f"]);
    expect(d.size).toBe(0);
    expect([a, b, c, f].every((x) => x!.slot === -1)).toBe(true);
  });

  it("keeps the heap ordered through random schedules and cancels", () => {
    const d = new Deadlines();
    const fired: string[] = [];
    const entries = Array.from({ length: 300 }, (_, i) => entry(String(i), fired));
    const far = Date.now() + 3_600_000;
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const live = new Set<Due>();
    for (let step = 0; step < 5_000; step++) {
      const x = entries[Math.floor(rnd() * entries.length)]!;
      if (rnd() < 0.3) {
        d.cancel(x);
        live.delete(x);
      } else {
        d.schedule(x, far + Math.floor(rnd() * 1_000_000));
        live.add(x);
      }
    }
    expect(d.size).toBe(live.size);
    // Every slot names its entry and every parent is due no later than its children.
    const heap = (d as unknown as { heap: Due[] }).heap;
    heap.forEach((x, i) => {
      expect(x.slot).toBe(i);
      if (i > 0) expect(heap[(i - 1) >> 1]!.due).toBeLessThanOrEqual(x.due);
    });
    for (const x of live) d.cancel(x);
    expect(d.size).toBe(0);
  });

  it("an entry that throws does not stop the others", async () => {
    const fired: string[] = [];
    const d = new Deadlines();
    const bad: Due = { due: 0, slot: -1, expire: () => { throw new Error("boom"); } };
    const good = entry("good", fired);
    d.schedule(bad, Date.now() + 5);
    d.schedule(good, Date.now() + 5);
    await sleep(40);
    expect(fired).toEqual(["good"]);
  });
});
