// `npm run bench:sse`: the CPU a streamed Chat Completions answer costs the worker per SSE event,
// reading the body with the `openai` SDK's Stream versus the lean reader (libs/providers/src/shared/sse.ts),
// over a real local HTTP server (node:http in a child process, so its CPU is not counted) that
// serves one event per write or many per write. Two levels:
//   parser   — the SDK call's Stream iterated, vs the same SDK call's asResponse() read by sseItems
//   adapter  — createOpenAIChatAdapter().stream() end to end (request, decoder, ProviderEvents);
//              with BENCH_SSE_BASELINE (an absolute path), the same adapter of an older tree in the same process,
//              alternated with the current one (A/B). Prepare one with e.g.
//              mkdir -p .sse-baseline && git archive <rev> libs/providers/src | tar -x -C .sse-baseline
// Not a test.   BENCH_SSE_EVENTS (4000)  BENCH_SSE_ROUNDS (5)  BENCH_SSE_PER_WRITE (1,25)  BENCH_SSE_BASELINE
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { ModelCallRequest, ProviderAdapter } from "@byok/protocol";
import { createOpenAIChatAdapter, openaiSseStream } from "@byok/providers";

const EVENTS = Number(process.env.BENCH_SSE_EVENTS ?? 4000);
const ROUNDS = Number(process.env.BENCH_SSE_ROUNDS ?? 5);
const PER_WRITE = (process.env.BENCH_SSE_PER_WRITE ?? "1,25").split(",").map(Number);
const BASELINE = process.env.BENCH_SSE_BASELINE;

/** The server (child process): every POST gets EVENTS chunks, PER_WRITE per write, then usage and [DONE]. */
async function serve(): Promise<void> {
  const { createServer } = await import("node:http");
  const chunk = (i: number, finish: string | null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "bench", choices: [{ index: 0, delta: finish ? {} : { content: `tok${i} ` }, logprobs: null, finish_reason: finish }] })}\n\n`;
  const events = Array.from({ length: Number(process.env.EVENTS) }, (_, i) => chunk(i, null));
  events.push(chunk(0, "stop"), `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "bench", choices: [], usage: { prompt_tokens: 10, completion_tokens: events.length, total_tokens: 10 + events.length } })}\n\n`, "data: [DONE]\n\n");
  const server = createServer((req, res) => {
    const perWrite = Number(/^\/p(\d+)\//.exec(req.url ?? "")?.[1] ?? 1);
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.socket?.setNoDelay(true);
      let i = 0;
      const next = (): void => {
        while (i < events.length) {
          const part = events.slice(i, i + perWrite).join("");
          i += perWrite;
          const more = res.write(part);
          // One write per turn of the loop, so a write is (mostly) one network chunk.
          if (more) return void setImmediate(next);
          return void res.once("drain", next);
        }
        res.end();
      };
      next();
    });
  });
  server.listen(0, "127.0.0.1", () => {
    const addr = server.address();
    process.send?.({ port: typeof addr === "object" && addr ? addr.port : 0 });
  });
}

type Run = (baseURL: string) => Promise<number>;

function client(baseURL: string): OpenAI {
  return new OpenAI({ apiKey: "bench", baseURL, maxRetries: 0, logLevel: "off", organization: null, project: null });
}
const body = { model: "bench", messages: [{ role: "user" as const, content: "hi" }], stream: true as const };

const sdkStream: Run = async (baseURL) => {
  let n = 0;
  const stream = await client(baseURL).chat.completions.create(body, { signal: new AbortController().signal });
  for await (const ev of stream) if (ev.choices) n++;
  return n;
};

const leanReader: Run = async (baseURL) => {
  let n = 0;
  const signal = new AbortController().signal;
  for await (const batch of await openaiSseStream<ChatCompletionChunk>(client(baseURL).chat.completions.create(body, { signal }), signal)) {
    for (const ev of batch) if (ev.choices) n++;
  }
  return n;
};

function adapterRun(adapter: ProviderAdapter): Run {
  return async (baseURL) => {
    const req: ModelCallRequest = {
      target: { kind: "openai-chat", model: "bench", baseUrl: baseURL, apiKey: "bench", credentialsSource: "client" },
      instructions: "bench",
      items: [{ role: "user", text: "hi" }],
      tools: [],
      modelCallId: "mc-bench",
      attempt: 1,
      signal: new AbortController().signal,
    };
    let n = 0;
    for await (const ev of adapter.stream(req)) if (ev.type === "text_delta") n++;
    return n;
  };
}

async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, SSE_BENCH_SERVER: "1", EVENTS: String(EVENTS) }, execArgv: process.execArgv });
  const port = await new Promise<number>((resolve) => child.once("message", (m: { port: number }) => resolve(m.port)));
  const variants: [string, Run][] = [["parser  sdk Stream", sdkStream], ["parser  lean sseItems", leanReader], ["adapter current", adapterRun(createOpenAIChatAdapter())]];
  if (BASELINE) {
    const old = (await import(`${BASELINE}/libs/providers/src/openai-chat/adapter.ts`)) as { createOpenAIChatAdapter: () => ProviderAdapter };
    variants.push(["adapter baseline", adapterRun(old.createOpenAIChatAdapter())]);
  }
  console.log(`bench:sse  ${EVENTS} events per answer, ${ROUNDS} rounds, alternating variants; CPU is this process only (server in a child)`);
  try {
    for (const per of PER_WRITE) {
      // The path selects the events per write.
      const baseURL = `http://127.0.0.1:${port}/p${per}/v1`;
      const samples = new Map<string, number[]>(variants.map(([name]) => [name, []]));
      const run = async (name: string, f: Run, keep: boolean) => {
        const cpu = process.cpuUsage();
        const n = await f(baseURL);
        const used = process.cpuUsage(cpu);
        if (n < EVENTS) throw new Error(`${name}: ${n} events, expected ${EVENTS}`);
        if (keep) samples.get(name)?.push((used.user + used.system) / EVENTS);
      };
      for (const [name, f] of variants) await run(name, f, false); // warm-up
      for (let r = 0; r < ROUNDS; r++) {
        const order = r % 2 === 0 ? variants : [...variants].reverse();
        for (const [name, f] of order) await run(name, f, true);
      }
      console.log(`\n${per} event(s) per write: CPU µs per event (min / median / max of ${ROUNDS})`);
      for (const [name, xs] of samples) {
        const s = [...xs].sort((a, b) => a - b);
        console.log(`  ${name.padEnd(24)} ${s[0]?.toFixed(2)} / ${s[Math.floor(s.length / 2)]?.toFixed(2)} / ${s.at(-1)?.toFixed(2)}`);
      }
    }
  } finally {
    child.kill();
  }
}

if (process.env.SSE_BENCH_SERVER) await serve();
else await main();
