import { Agent, request } from "node:http";

/** One HTTP/1.1 POST's answer: status, headers, and the body as it arrives. */
export interface PostResponse {
  status: number;
  headers: Headers;
  body: AsyncIterable<Uint8Array>;
  text(): Promise<string>;
}

/** How the client sends its POSTs. */
export type HttpTransport = (url: string, init: { headers: Record<string, string>; body: Uint8Array; signal?: AbortSignal; stream?: boolean }) => Promise<PostResponse>;

/** Node's fetch (undici): what most tests use. */
export const fetchTransport: HttpTransport = async (url, init) => {
  const res = await fetch(url, { method: "POST", headers: init.headers, body: init.body, ...(init.signal ? { signal: init.signal } : {}) });
  const body = res.body;
  return {
    status: res.status,
    headers: res.headers,
    body: body ?? (async function* () {})(),
    text: () => res.text(),
  };
};

/**
 * node:http directly, for load generation: undici's pool slows down with thousands of open
 * connections to one origin (2000 held streams from one process: a response head took 0.3 s at
 * the median with fetch, 0.6 ms with node:http, docs/benchmarks.md), which the benchmark would
 * otherwise report as the gateway's latency. Streams (RunSSE) get a connection of their own, as
 * Cursor's clients hold one per stream; short requests (BidiAppend) share keep-alive connections.
 */
export function nodeHttpTransport(): HttpTransport {
  // Idle pooled connections close after 4 s, before the gateway's HTTP keep-alive timeout (5 s,
  // Node's default): a request sent on a connection the server is closing would fail ECONNRESET.
  const keepAlive = new Agent({ keepAlive: true, timeout: 4_000 });
  return (url, init) =>
    new Promise<PostResponse>((resolve, reject) => {
      const req = request(url, {
        method: "POST",
        agent: init.stream ? false : keepAlive,
        headers: { ...init.headers, "content-length": String(init.body.byteLength) },
        ...(init.signal ? { signal: init.signal } : {}),
      });
      req.on("error", reject);
      req.on("response", (res) => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
        resolve({
          status: res.statusCode ?? 0,
          headers,
          body: res,
          text: async () => {
            const chunks: Buffer[] = [];
            for await (const c of res) chunks.push(c as Buffer);
            return Buffer.concat(chunks).toString("utf8");
          },
        });
      });
      req.end(init.body);
    });
}
