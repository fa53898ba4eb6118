// Fast takeover after a worker process dies: its presence subscription vanishes with its
// connections, a live worker's check frees its jobs, and BullMQ's stalled check hands them to
// the live worker — long before the dead worker's 30 s job lock would have expired.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { commandCount, monitorCommands } from "@byok/testing";
import { startWorkerPresence, type WorkerPresence } from "../src/index.js";
import { REDIS_URL } from "./redis-harness.js";

const prefix = `{test-presence-${randomUUID().slice(0, 8)}}`;
const FIXTURE = fileURLToPath(new URL("./fixtures/presence-worker.ts", import.meta.url));

describe("worker presence", () => {
  const admin = new Redis(REDIS_URL);
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    const keys = await admin.keys(`${prefix}:*`);
    if (keys.length > 0) await admin.unlink(...keys);
    await admin.quit();
  });

  it("frees the jobs of a worker killed with SIGKILL; a live worker runs them; a clean close unregisters", async () => {
    const queue = new Queue("runs", { connection: new Redis(REDIS_URL), prefix });
    closers.push(() => queue.close());
    const child = spawn(process.execPath, ["--import", "tsx", FIXTURE], {
      env: { ...process.env, REDIS_URL, QUEUE_PREFIX: prefix, WORKER_NAME: "doomed" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    closers.push(async () => child.kill("SIGKILL"));
    let out = "";
    const holding = new Promise<string>((resolve) => {
      child.stdout!.on("data", (b: Buffer) => {
        out += b.toString();
        const m = /HOLDING (\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
    });
    await new Promise<void>((resolve) => child.stdout!.on("data", () => out.includes("READY") && resolve()));
    await queue.add("run", {}, { jobId: "job-1" });
    expect(await holding).toBe("job-1");

    // The live worker: its own presence, a short stalled check, a 30 s lock like the dead one's.
    const commands = new Redis(REDIS_URL);
    const released: string[] = [];
    const presence: WorkerPresence = startWorkerPresence({
      redis: REDIS_URL, queue: { name: "runs", prefix }, workerName: "survivor", checkMs: 100, commands,
      onError: () => undefined, onReleased: (ids) => released.push(...ids),
    });
    await presence.ready();
    const ran = new Promise<string>((resolve) => {
      const w = new Worker("runs", async (job) => resolve(`${job.id}`), {
        connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix, name: "survivor", lockDuration: 30_000, stalledInterval: 200,
      });
      closers.push(() => w.close());
    });
    expect(await admin.smembers(`${prefix}:runs:byok-workers`)).toEqual(expect.arrayContaining(["doomed", "survivor"]));

    child.kill("SIGKILL");
    expect(await ran).toBe("job-1");
    expect(released).toEqual(["job-1"]);
    const job = await queue.getJob("job-1");
    expect(job?.stalledCounter).toBe(1); // re-queued by BullMQ's stalled check, which counts it
    expect(await admin.smembers(`${prefix}:runs:byok-workers`)).toEqual(["survivor"]);

    // A check that finds nobody dead, the only worker registered: EVALSHA + SMEMBERS (its own
    // subscription is not looked up while it is registered).
    const m = await monitorCommands(REDIS_URL);
    await new Promise((r) => setTimeout(r, 350));
    const rows = (await m.stop()).filter((row) => row.args.some((a) => a.includes(`${prefix}:runs:byok-workers`)));
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(commandCount(rows, prefix)).toBe(2 * rows.length);
    // Unregistered behind its back (another worker thought it dead): the next check registers it again.
    await admin.srem(`${prefix}:runs:byok-workers`, "survivor");
    await new Promise((r) => setTimeout(r, 250));
    expect(await admin.smembers(`${prefix}:runs:byok-workers`)).toEqual(["survivor"]);

    await presence.close();
    await commands.quit();
    expect(await admin.smembers(`${prefix}:runs:byok-workers`)).toEqual([]);
  }, 120_000); // two worker processes start on a possibly loaded machine
});
