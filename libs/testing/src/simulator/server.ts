import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { EventEmitter } from "node:events";
import type { ApiRenderer, Frame, RenderContext } from "./renderer.js";
import { findSecretIn, type SecretHit, type SimRequest } from "./recording.js";
import type { SimScript } from "./script.js";
import { allRenderers } from "./apis.js";
import { DEFAULT_SIM_CONTEXT_WINDOW, requestedModel, vendorRejection } from "./validate.js";

/** A queued answer: a script, or a function of the recorded request that returns one. */
export type SimScriptSource = SimScript | ((request: SimRequest) => SimScript);

export interface SimulatorOptions {
  /** Answer used when the queue is empty. Default: a short text answer. */
  defaultScript?: SimScriptSource;
  /** Renderers to serve (default: every API the simulator knows). */
  renderers?: readonly ApiRenderer[];
  /** Context window per upstream model (body `model`, Bedrock's path model id); others get DEFAULT_SIM_CONTEXT_WINDOW. */
  contextWindows?: Readonly<Record<string, number>>;
}

/**
 * A model-provider simulator on 127.0.0.1:<random port>.
 *
 * Guarantees: a request the vendor would refuse (validate.ts: a tool call without its result,
 * a prompt over the model's context window) gets the vendor's own 400 and consumes no script;
 * other requests are answered with queued scripts in arrival order (one script per request,
 * whichever API it targets); every request is recorded before it is answered; a
 * request's `outcome`/`clientDisconnected` are final once `waitFor…` sees them; `close()`
 * releases stalled streams and destroys open connections.
 */
export interface Simulator {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:54321`. */
  readonly url: string;
  readonly requests: readonly SimRequest[];
  enqueue(...scripts: SimScriptSource[]): void;
  /** Scripts still queued. */
  readonly pending: number;
  /** Resolves once `predicate` holds (re-checked on every request state change); rejects after `timeoutMs` (default 10 s). */
  waitFor(predicate: (requests: readonly SimRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves with request `index` once it exists. */
  waitForRequest(index: number, timeoutMs?: number): Promise<SimRequest>;
  /** Resolves with request `index` once its exchange has ended (any outcome). */
  waitForEnd(index: number, timeoutMs?: number): Promise<SimRequest>;
  /** Where `secret` occurs in recorded requests (bodies, urls, headers except `ignoreHeaders`). */
  findSecret(secret: string, ignoreHeaders?: readonly string[]): SecretHit[];
  close(): Promise<void>;
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const renderers = opts.renderers ?? allRenderers;
  const defaultScript: SimScriptSource = opts.defaultScript ?? { text: "Hello from the simulator." };
  const queue: SimScriptSource[] = [];
  const requests: SimRequest[] = [];
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  const closing = new AbortController();
  let seq = 0;

  const changed = () => changes.emit("change");

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      // A bug in the simulator must surface in the test, not hang it.
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`simulator failure: ${String(err)}`);
      } else {
        res.destroy();
      }
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    const url = req.url ?? "/";
    const pathname = new URL(url, "http://sim").pathname;
    const method = req.method ?? "GET";
    const renderer = renderers.find((r) => r.matches(method, pathname));
    const record: SimRequest = {
      index: requests.length,
      api: renderer?.api ?? "unknown",
      method,
      url,
      pathname,
      headers: flattenHeaders(req),
      rawBody,
      body: parseObject(rawBody),
      outcome: "pending",
      clientDisconnected: false,
      framesSent: 0,
    };
    requests.push(record);
    changed();

    let finishedByUs = false;
    res.on("close", () => {
      if (!finishedByUs && !res.writableFinished && !closing.signal.aborted) {
        record.clientDisconnected = true;
        record.outcome = "client_disconnected";
      } else if (record.outcome === "pending") {
        record.outcome = closing.signal.aborted ? "server_disconnected" : "completed";
      }
      changed();
    });
    const clientGone = new AbortController();
    res.on("close", () => clientGone.abort());
    const stop = AbortSignal.any([clientGone.signal, closing.signal]);

    if (!renderer) {
      finishedByUs = true;
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `simulator: no API at ${method} ${pathname}`, type: "not_found" } }));
      return;
    }

    const rejection = vendorRejection(renderer.api, record, opts.contextWindows?.[requestedModel(record)] ?? DEFAULT_SIM_CONTEXT_WINDOW);
    if (rejection) {
      record.rejectedWith = JSON.stringify(rejection.body);
      finishedByUs = true;
      res.writeHead(rejection.status, { "content-type": "application/json", ...rejection.headers });
      res.end(record.rejectedWith);
      return;
    }

    const source = queue.shift() ?? defaultScript;
    const script = typeof source === "function" ? source(record) : source;
    const ctx: RenderContext = { request: record, seq: ++seq };

    if (script.firstByteDelayMs) await delay(script.firstByteDelayMs, stop);
    if (stop.aborted) return;

    if (script.httpError) {
      const e = script.httpError;
      const body = e.body === undefined ? renderer.errorBody(e.status, record) : e.body;
      const text = typeof body === "string" ? body : JSON.stringify(body);
      finishedByUs = true;
      res.writeHead(e.status, {
        "content-type": typeof body === "string" ? "text/plain" : "application/json",
        ...renderer.errorHeaders?.(e.status),
        ...e.headers,
      });
      res.end(text);
      return;
    }

    if (!renderer.isStreaming(record.body, pathname)) {
      finishedByUs = true;
      res.writeHead(200, { "content-type": "application/json", ...script.headers });
      res.end(JSON.stringify(renderer.jsonResponse(script, ctx)));
      return;
    }

    let frames = renderer.streamFrames(script, ctx);
    let endsEarly = false;
    if (script.streamError) {
      frames = [...frames.slice(0, script.streamError.afterChunks ?? 1), renderer.streamErrorFrame(script.streamError)];
      endsEarly = true;
    }
    res.writeHead(200, {
      "content-type": renderer.streamContentType,
      "cache-control": "no-cache",
      ...script.headers,
    });
    res.flushHeaders();

    for (let i = 0; i < frames.length; i++) {
      if (stop.aborted) return;
      if (i === script.disconnectAfterChunks) {
        finishedByUs = true;
        record.outcome = "server_disconnected";
        res.socket?.destroy();
        changed();
        return;
      }
      if (i === script.endAfterChunks) {
        endsEarly = true;
        break;
      }
      if (i === script.stallAfterChunks) {
        await delay(Number.POSITIVE_INFINITY, stop);
        return;
      }
      if (i > 0 && script.chunkDelayMs) {
        await delay(script.chunkDelayMs, stop);
        if (stop.aborted) return;
      }
      const frame: Frame = i === script.malformedAt ? renderer.malformedFrame() : (frames[i] as Frame);
      // Wait until the frame is handed to the socket so a later `disconnectAfterChunks`
      // destroy cannot discard frames the script says were sent.
      await new Promise<void>((resolve) => res.write(frame, () => resolve()));
      record.framesSent++;
    }
    if (script.endDelayMs) {
      await delay(script.endDelayMs, stop);
      if (stop.aborted) return;
    }
    finishedByUs = true;
    record.outcome = endsEarly ? "ended_early" : "completed";
    res.end();
    changed();
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  const waitFor = (predicate: (r: readonly SimRequest[]) => boolean, timeoutMs = 10_000): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (predicate(requests)) {
          cleanup();
          resolve();
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`simulator: condition not reached within ${timeoutMs} ms`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        changes.off("change", check);
      };
      changes.on("change", check);
      check();
    });

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get pending() {
      return queue.length;
    },
    enqueue: (...scripts) => void queue.push(...scripts),
    waitFor,
    async waitForRequest(index, timeoutMs) {
      await waitFor((r) => r.length > index, timeoutMs);
      return requests[index] as SimRequest;
    },
    async waitForEnd(index, timeoutMs) {
      await waitFor((r) => r[index] !== undefined && r[index].outcome !== "pending", timeoutMs);
      return requests[index] as SimRequest;
    },
    findSecret: (secret, ignoreHeaders) => findSecretIn(requests, secret, ignoreHeaders),
    close: () =>
      new Promise<void>((resolve) => {
        closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function parseObject(raw: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(raw);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/** Resolves after `ms` or as soon as `signal` aborts (never rejects). */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
