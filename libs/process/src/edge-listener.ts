/**
 * One port for HTTP/1.1 and HTTP/2 (docs/control-plane.md "Transports"). Each connection goes to
 * the HTTP/1.1 server or to an HTTP/2 server, both calling the same request handler:
 * - TLS (certificate and key from GATEWAY_TLS_CERT_FILE / GATEWAY_TLS_KEY_FILE): by ALPN, `h2`
 *   or `http/1.1`;
 * - cleartext: h2c with prior knowledge when the connection opens with the HTTP/2 preface,
 *   HTTP/1.1 otherwise (node's http2.createServer has no allowHTTP1 for cleartext, so the first
 *   bytes decide).
 * The HTTP/1.1 server keeps its own connection bookkeeping (closeAllConnections, closeIdleConnections
 * for drain, the headers timeout) although the net listener, not it, listens (trackedHttp1).
 *
 * Accepting (GATEWAY_LISTEN_SOCKETS, docs/operations.md "Sizing"): Node accepts one connection per
 * listening socket per turn of the event loop, so a replica busy streaming (turns of tens of ms)
 * would take new connections a few dozen a second. On Linux the port is held by that many
 * listening sockets (SO_REUSEPORT; the kernel spreads connections over them), each accepted
 * from in the same turn; elsewhere by one. A port another process holds is still refused
 * (EADDRINUSE): it is probed with a plain socket first, since SO_REUSEPORT would otherwise let a
 * second gateway of the same user share it and take half the connections.
 *
 * Connection limit (GATEWAY_MAX_CONNECTIONS, README "Limits"): every accepted TCP connection
 * counts (keep-alive sockets, a BidiAppend's, an HTTP/2 session with all its streams) until it
 * closes. A connection that arrives past the limit is not dropped (a client would see a reset or
 * a hang): it goes to a refusing server of its protocol that answers each request with
 * `connections.refuse` (a retryable Connect error) and then closes it — HTTP/1.1 with
 * `connection: close`, HTTP/2 with GOAWAY after the first answered stream — or closes it after
 * REFUSED_IDLE_MS if nothing is asked.
 */
import { readFileSync } from "node:fs";
import { createServer as createHttp1Server, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createH2Server, type Http2Server, type Http2Session } from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { GatewayMetrics } from "@byok/telemetry";
import { listen } from "./listen.js";

/** The first bytes of every HTTP/2 connection (RFC 9113 §3.4). */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** A connection refused past the limit that asks nothing is closed after this. */
const REFUSED_IDLE_MS = 10_000;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface EdgeListener {
  /** The HTTP/1.1 server (timeouts, connection tracking, drain). It does not listen itself. */
  http1: Server;
  http2: Http2Server;
  /** `http://host:port` or `https://host:port`. */
  url: string;
  port: number;
  /** Stops accepting, closes HTTP/2 sessions and every HTTP/1.1 connection. */
  close(): Promise<void>;
  /** Stops accepting; open connections stay (drain). */
  stopAccepting(): Promise<void>;
}

export interface EdgeListenOptions {
  host: string;
  port: number;
  tls: { certFile: string; keyFile: string } | undefined;
  /** The listen backlog of each listening socket (GATEWAY_LISTEN_BACKLOG); Node's default (511) when undefined. */
  backlog?: number;
  /** Listening sockets on the port (GATEWAY_LISTEN_SOCKETS; SO_REUSEPORT, Linux only: one elsewhere). Default 1. */
  sockets?: number;
  /** The connection limit; `refuse` answers every request of a connection past `max`. */
  connections?: { max: number; refuse: Handler; metrics?: GatewayMetrics };
}

export async function listenEdge(handler: Handler, opts: EdgeListenOptions): Promise<EdgeListener> {
  const http1 = trackedHttp1(handler);
  // Many long-lived streams: no per-request timeout, keep-alive as usual.
  http1.requestTimeout = 0;
  http1.headersTimeout = 30_000;
  // The compatibility API's request and response are what the handler uses of node:http's.
  const http2 = createH2Server(handler as unknown as Parameters<typeof createH2Server>[0]);
  const sessions = new Set<Http2Session>();
  http2.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });

  const limit = opts.connections;
  const refusing = limit ? refusingServers(limit.refuse) : undefined;
  let open = 0;
  /** Counts the connection in (false past the limit: it is refused, and not counted). */
  const admit = (socket: Socket): boolean => {
    if (!limit) return true;
    if (open >= limit.max) {
      limit.metrics?.connectionsRefused.inc();
      socket.setTimeout(REFUSED_IDLE_MS, () => socket.destroy());
      return false;
    }
    open++;
    limit.metrics?.connectionsOpen.set(open);
    socket.once("close", () => {
      open--;
      limit.metrics?.connectionsOpen.set(open);
    });
    return true;
  };
  const route = (socket: Socket, h2: boolean, admitted: boolean) =>
    (admitted ? (h2 ? http2 : http1) : h2 ? refusing!.http2 : refusing!.http1).emit("connection", socket);
  const tlsOptions = opts.tls ? { cert: readFileSync(opts.tls.certFile), key: readFileSync(opts.tls.keyFile), ALPNProtocols: ["h2", "http/1.1"] } : undefined;
  const createListener = () => tlsOptions
    ? createTlsServer(tlsOptions, (s: TLSSocket) => route(s, s.alpnProtocol === "h2", admit(s)))
    : createNetServer((socket) => {
        const admitted = admit(socket);
        // Until a server takes the socket it is ours: a client that resets it now (ECONNRESET)
        // must close it, not crash the process with an unhandled 'error'.
        const early = () => socket.destroy();
        socket.on("error", early);
        socket.once("readable", function sniff() {
          const head: Buffer | null = socket.read(Math.min(H2_PREFACE.length, socket.readableLength)) as Buffer | null;
          if (head === null) return void socket.once("readable", sniff);
          socket.unshift(head);
          // A partial preface is rare (it is one small write); wait for the rest only while it still matches.
          if (head.length < H2_PREFACE.length && H2_PREFACE.subarray(0, head.length).equals(head)) {
            return void socket.once("readable", sniff);
          }
          socket.off("error", early);
          route(socket, head.equals(H2_PREFACE.subarray(0, head.length)) && head.length === H2_PREFACE.length, admitted);
        });
      });
  const scheme = opts.tls ? "https" : "http";
  const sockets = process.platform === "linux" ? Math.max(1, opts.sockets ?? 1) : 1;
  const reusePort = sockets > 1;
  // A fixed port: fail as a plain listen would if anything holds it (port 0 never shares: the
  // kernel picks a port no socket is bound to).
  if (reusePort && opts.port !== 0) {
    const probe = createNetServer();
    await listen(probe, opts.host, opts.port);
    await new Promise<void>((r) => probe.close(() => r()));
  }
  const listeners = [createListener()];
  const url = await listen(listeners[0]!, opts.host, opts.port, scheme, { ...(opts.backlog !== undefined ? { backlog: opts.backlog } : {}), reusePort });
  // The others on the port the first one got (port 0 picks a free one).
  const port = (listeners[0]!.address() as AddressInfo).port;
  try {
    for (let i = 1; i < sockets; i++) {
      const l = createListener();
      await listen(l, opts.host, port, scheme, { ...(opts.backlog !== undefined ? { backlog: opts.backlog } : {}), reusePort });
      listeners.push(l);
    }
  } catch (err) {
    for (const l of listeners) l.close();
    throw err;
  }
  let stopped: Promise<void> | undefined;
  const stopAccepting = () => (stopped ??= Promise.all(listeners.map((l) => new Promise<void>((r) => l.close(() => r())))).then(() => undefined));
  return {
    http1,
    http2,
    port,
    url,
    stopAccepting,
    async close() {
      const done = stopAccepting();
      for (const s of sessions) s.destroy();
      closeTracked(http1);
      refusing?.close();
      await done;
    },
  };
}

/**
 * The servers of connections past the limit: each request is answered by `refuse` and the
 * connection then closed (HTTP/1.1: `connection: close`; HTTP/2: GOAWAY once a stream was
 * answered, so the client opens a new connection, to this replica or another).
 */
function refusingServers(refuse: Handler): { http1: Server; http2: Http2Server; close(): void } {
  const http1 = trackedHttp1((req, res) => {
    res.setHeader("connection", "close");
    refuse(req, res);
  });
  http1.headersTimeout = REFUSED_IDLE_MS;
  http1.requestTimeout = REFUSED_IDLE_MS;
  const http2 = createH2Server(refuse as unknown as Parameters<typeof createH2Server>[0]);
  const sessions = new Set<Http2Session>();
  http2.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
    s.setTimeout(REFUSED_IDLE_MS, () => s.destroy());
  });
  http2.on("stream", (stream) => {
    const session = stream.session;
    stream.once("close", () => {
      if (!session || session.closed || session.destroyed) return;
      session.goaway();
      session.close();
    });
  });
  return {
    http1,
    http2,
    close() {
      for (const s of sessions) s.destroy();
      closeTracked(http1);
    },
  };
}

/**
 * An HTTP/1.1 server that is handed its connections (it never listens itself) but tracks them
 * as a listening one does: node starts a server's connection list and its timeout checks
 * (headersTimeout, requestTimeout) on its "listening" event, and closeAllConnections /
 * closeIdleConnections do nothing without them.
 */
function trackedHttp1(handler: Handler): Server {
  const server = createHttp1Server(handler);
  server.emit("listening");
  return server;
}

/** Closes every connection of a tracked server and stops its timeout checks. */
function closeTracked(server: Server): void {
  server.closeAllConnections();
  // Not listening, so close() only stops the checks (and reports ERR_SERVER_NOT_RUNNING, ignored).
  server.close(() => undefined);
}
