/**
 * `agent.v1.AgentService/Run` over HTTP/2 with connect-node's own Connect client: the IDE's
 * default transport. One bidi call per turn: the first message (a run_request), then the
 * client's answers to KV queries (acting as Cursor's blob store), until the server ends the
 * stream. h2c for `http://` base URLs, h2 over TLS for `https://` (pass the CA).
 */
import { createClient, ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AgentService, type AgentClientMessage, type AgentServerMessage } from "@byok/wire";
import { kvGetBlobResultMessage, kvSetBlobResultMessage } from "./messages.js";

export interface RunH2Options {
  baseUrl: string;
  token: string | undefined;
  requestId: string;
  message: AgentClientMessage;
  /** PEM of the CA that signed the gateway's certificate (https only). */
  ca?: string;
  headers?: Record<string, string>;
  /** Called for every server message (heartbeats included); `send` appends to the client's stream. */
  onMessage?: (m: AgentServerMessage, send: (m: AgentClientMessage) => void) => void | Promise<void>;
  signal?: AbortSignal;
}

export interface RunH2Result {
  messages: AgentServerMessage[];
  textDeltas: string;
  heartbeats: number;
  /** The stream's error, undefined when it ended `{}`. */
  error: ConnectError | undefined;
}

export async function runOverHttp2(opts: RunH2Options): Promise<RunH2Result> {
  const transport = createConnectTransport({
    baseUrl: opts.baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    ...(opts.ca ? { nodeOptions: { ca: opts.ca } } : {}),
  });
  const client = createClient(AgentService, transport);
  // The client half: an async queue the reader feeds with answers; closed when the server ends.
  const queue: AgentClientMessage[] = [opts.message];
  let wake: (() => void) | undefined;
  let closed = false;
  const send = (m: AgentClientMessage) => {
    queue.push(m);
    wake?.();
  };
  async function* input(): AsyncGenerator<AgentClientMessage> {
    for (;;) {
      while (queue.length > 0) yield queue.shift()!;
      if (closed) return;
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
  }
  const blobs = new Map<string, Uint8Array>();
  const r: RunH2Result = { messages: [], textDeltas: "", heartbeats: 0, error: undefined };
  try {
    const headers = {
      "x-request-id": opts.requestId,
      "x-original-request-id": opts.requestId,
      "x-cursor-client-type": "ide",
      "x-cursor-client-version": "2.3.41",
      "x-ghost-mode": "false",
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...opts.headers,
    };
    for await (const m of client.run(input(), { headers, ...(opts.signal ? { signal: opts.signal } : {}) })) {
      r.messages.push(m);
      const u = m.message.case === "interactionUpdate" ? m.message.value.message : undefined;
      if (u?.case === "textDelta") r.textDeltas += u.value.text;
      if (u?.case === "heartbeat") r.heartbeats++;
      if (m.message.case === "kvServerMessage") {
        const kv = m.message.value;
        if (kv.message.case === "setBlobArgs") {
          blobs.set(Buffer.from(kv.message.value.blobId).toString("hex"), kv.message.value.blobData);
          send(kvSetBlobResultMessage(kv.id));
        } else if (kv.message.case === "getBlobArgs") {
          send(kvGetBlobResultMessage(kv.id, blobs.get(Buffer.from(kv.message.value.blobId).toString("hex"))));
        }
      }
      await opts.onMessage?.(m, send);
    }
  } catch (err) {
    r.error = ConnectError.from(err);
  } finally {
    closed = true;
    wake?.();
  }
  return r;
}
