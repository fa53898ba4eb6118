// `npm run bench:appends`: the ingress's CPU per BidiAppend that starts nothing (an in-order
// append of a heartbeat to a request whose run already exists: HTTP, Connect, authentication,
// the append script; no job, no worker), one at a time and BENCH_APPEND_INFLIGHT (20) in
// flight, from the ingress process's own CPU time (/proc). A turn sends a handful of these
// besides the one that starts it. BENCH_APPEND_PROFILE_DIR=<dir>: the ingress runs under
// --cpu-prof, its profile written there on exit (open it in DevTools). Not a test.
//   BENCH_APPENDS (3000 per round)  BENCH_APPEND_INFLIGHT (20)  DATABASE_URL
import { randomUUID } from "node:crypto";
import { createCursorClient, heartbeatMessage, nodeHttpTransport, runRequestMessage } from "@byok/testing";
import { benchGatewayEnv, MODEL, startBenchSim } from "./scenarios.js";
import { cpuSeconds, distributedSetup, spawnProc, startRedis } from "./services.js";
import { round } from "./stats.js";

const N = Number(process.env.BENCH_APPENDS ?? 3000);
const IN_FLIGHT = Number(process.env.BENCH_APPEND_INFLIGHT ?? 20);
const PROFILE_DIR = process.env.BENCH_APPEND_PROFILE_DIR;
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const bs = await startBenchSim();
const redis = await startRedis();
const { env, key, drop } = await distributedSetup(benchGatewayEnv(bs.sim.url), redis.url, DATABASE_URL);
const ingress = await spawnProc("ingress", env, PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-dir", PROFILE_DIR] : []);
const rounds: { inFlight: number; ingressCpuUsPerAppend: number; wallUsPerAppend: number }[] = [];
try {
  const client = createCursorClient({ baseUrl: ingress.url, authToken: key, transport: nodeHttpTransport() });
  // Alternated, twice: the first round of each also warms the process up.
  for (const inFlight of [1, IN_FLIGHT, 1, IN_FLIGHT]) {
    const requestId = randomUUID();
    const first = await client.append(requestId, 1n, runRequestMessage({ text: "hi", modelId: MODEL, conversationId: randomUUID() }));
    if (!first.ok) throw new Error(`the run request was refused: ${first.code} ${first.message}`);
    let seqno = 2n;
    const cpu0 = cpuSeconds(ingress.pid);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let i = 0; i < N / inFlight; i++) {
          const r = await client.append(requestId, seqno++, heartbeatMessage());
          if (!r.ok) throw new Error(`append refused: ${r.code} ${r.message}`);
        }
      }),
    );
    const cpu = cpuSeconds(ingress.pid) - cpu0;
    rounds.push({ inFlight, ingressCpuUsPerAppend: round((cpu * 1e6) / N, 0), wallUsPerAppend: round(((performance.now() - t0) * 1000) / N, 0) });
  }
  console.log(JSON.stringify({ appendsPerRound: N, rounds }, null, 2));
} finally {
  await ingress.kill("SIGTERM"); // a clean exit writes the profile
  await drop();
  await redis.stop();
  await bs.sim.close();
}
process.exit(0);
