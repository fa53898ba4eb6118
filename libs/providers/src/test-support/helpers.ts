import { ProviderError, type ModelCallRequest, type ProviderAdapter, type ProviderEvent, type ProviderTarget } from "@byok/protocol";

/** Test-only helpers (not exported from the package). */

export function makeRequest(target: ProviderTarget, over: Partial<ModelCallRequest> = {}): ModelCallRequest {
  return {
    target,
    instructions: "You are a helpful assistant.",
    items: [{ role: "user", text: "Say hello." }],
    tools: [],
    modelCallId: "mc-1",
    attempt: 1,
    signal: new AbortController().signal,
    ...over,
  };
}

export interface PassResult {
  events: ProviderEvent[];
  error: ProviderError | undefined;
}

/** Runs a pass to its end; a thrown non-ProviderError fails the test (adapters must only throw ProviderError). */
export async function runPass(adapter: ProviderAdapter, req: ModelCallRequest, onEvent?: (e: ProviderEvent) => void): Promise<PassResult> {
  const events: ProviderEvent[] = [];
  try {
    for await (const e of adapter.stream(req)) {
      events.push(e);
      onEvent?.(e);
    }
    return { events, error: undefined };
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    return { events, error: err };
  }
}

export function textOf(events: readonly ProviderEvent[], type: "text_delta" | "reasoning_delta"): string {
  return events.map((e) => (e.type === type ? e.text : "")).join("");
}

export function completedOf(events: readonly ProviderEvent[]) {
  const last = events.at(-1);
  if (last?.type !== "completed") throw new Error(`pass did not complete; last event: ${JSON.stringify(last)}`);
  return last;
}

/** Everything a test can observe about an error, as one string to search for secrets. */
export function errorSurface(err: unknown): string {
  const parts: string[] = [];
  let cur: unknown = err;
  for (let i = 0; i < 8 && cur; i++) {
    if (cur instanceof Error) {
      parts.push(cur.message, cur.stack ?? "", JSON.stringify(cur, Object.getOwnPropertyNames(cur).filter((k) => k !== "cause")));
      cur = cur.cause;
    } else {
      parts.push(JSON.stringify(cur) ?? String(cur));
      break;
    }
  }
  return parts.join("\n");
}
