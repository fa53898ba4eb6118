/** The vendor API a request was addressed to. */
export type SimApi = "openai-chat" | "openai-responses" | "anthropic-messages" | "anthropic-count-tokens" | "bedrock-anthropic";

/** How the simulator's side of one exchange ended. */
export type SimOutcome =
  | "pending"
  /** The full answer (stream or JSON or HTTP error) was written. */
  | "completed"
  /** The client closed the connection before the answer was complete. */
  | "client_disconnected"
  /** The script cut the connection (`disconnectAfterChunks`). */
  | "server_disconnected"
  /** The script ended the response early without a terminator (`endAfterChunks`, `streamError`). */
  | "ended_early";

/** One request the simulator received, recorded verbatim so tests can check what was (and was not) sent. */
export interface SimRequest {
  readonly index: number;
  readonly api: SimApi | "unknown";
  readonly method: string;
  /** Path with query string, e.g. `/openai/deployments/d1/chat/completions?api-version=…`. */
  readonly url: string;
  readonly pathname: string;
  /** Lower-cased header names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly rawBody: string;
  /** The JSON body, or undefined when it was not a JSON object. */
  readonly body: Record<string, unknown> | undefined;
  outcome: SimOutcome;
  /** The vendor's error body when the simulator refused the request as the vendor would (validate.ts). */
  rejectedWith?: string;
  /** True when the client went away before the answer was complete (cancel reached the wire). */
  clientDisconnected: boolean;
  /** Frames written before the exchange ended. */
  framesSent: number;
}

/** Where `secret` occurs in recorded requests; `headers` lists header names. */
export interface SecretHit {
  requestIndex: number;
  where: "body" | "url" | { header: string };
}

export function findSecretIn(requests: readonly SimRequest[], secret: string, ignoreHeaders: readonly string[] = []): SecretHit[] {
  const hits: SecretHit[] = [];
  const ignored = new Set(ignoreHeaders.map((h) => h.toLowerCase()));
  for (const r of requests) {
    if (r.rawBody.includes(secret)) hits.push({ requestIndex: r.index, where: "body" });
    if (r.url.includes(secret)) hits.push({ requestIndex: r.index, where: "url" });
    for (const [name, value] of Object.entries(r.headers)) {
      if (!ignored.has(name) && value.includes(secret)) hits.push({ requestIndex: r.index, where: { header: name } });
    }
  }
  return hits;
}
