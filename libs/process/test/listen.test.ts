import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { Agent, createServer, get, type IncomingMessage } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { connect } from "node:http2";
import { afterEach, describe, expect, it } from "vitest";
import { closeServer, listen, listenEdge, type EdgeListener } from "../src/index.js";

// The one listen of every process: the same URL rule for the probe-only servers (worker,
// admin) and the edge's HTTP/1.1 + HTTP/2 port.
const cases: [host: string, url: RegExp][] = [
  ["127.0.0.1", /^http:\/\/127\.0\.0\.1:\d+$/],
  ["0.0.0.0", /^http:\/\/127\.0\.0\.1:\d+$/],
  ["::", /^http:\/\/\[::1\]:\d+$/],
  ["::1", /^http:\/\/\[::1\]:\d+$/],
];

/** One HTTP/1.1 request on its own connection (closed after the answer). */
function answer(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(`${url}/x`, { agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve(text));
    }).on("error", reject);
  });
}

describe("listen", () => {
  it.each(cases)("on %s gives a URL that reaches the server", async (host, re) => {
    const server = createServer((_req, res) => res.end("plain"));
    const url = await listen(server, host, 0);
    try {
      expect(url).toMatch(re);
      expect(await answer(url)).toBe("plain");
    } finally {
      await closeServer(server);
    }
  });

  it("rejects when the port is taken", async () => {
    const a = createServer();
    const url = await listen(a, "127.0.0.1", 0);
    const b = createServer();
    try {
      await expect(listen(b, "127.0.0.1", Number(new URL(url).port))).rejects.toMatchObject({ code: "EADDRINUSE" });
    } finally {
      await closeServer(a);
    }
  });
});

describe("listenEdge", () => {
  let edge: EdgeListener | undefined;
  afterEach(async () => {
    await edge?.close();
    edge = undefined;
  });

  it.each(cases)("on %s gives the same URL as listen, serving HTTP/1.1 and h2c there", async (host, re) => {
    edge = await listenEdge((req, res) => res.end(`v${req.httpVersion}`), { host, port: 0, tls: undefined });
    expect(edge.url).toMatch(re);
    expect(edge.url.endsWith(`:${edge.port}`)).toBe(true);
    expect(await answer(edge.url)).toBe("v1.1");
    const session = connect(edge.url);
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const req = session.request({ ":path": "/x" });
        let text = "";
        req.setEncoding("utf8");
        req.on("data", (c: string) => (text += c));
        req.on("end", () => resolve(text));
        req.on("error", reject);
      });
      expect(body).toBe("v2.0");
    } finally {
      session.destroy();
    }
  });
});

/** The listen backlog of the socket on 127.0.0.1:port, as the kernel reports it (`ss`: Send-Q of a LISTEN socket). */
function kernelBacklog(port: number): number {
  const line = execFileSync("ss", ["-ltnH", `sport = :${port}`], { encoding: "utf8" }).trim().split("\n")[0] ?? "";
  return Number(line.split(/\s+/)[2]);
}

describe("listenEdge's listen backlog (GATEWAY_LISTEN_BACKLOG)", () => {
  it("is the configured one, and Node's 511 without it", async () => {
    const configured = await listenEdge((_req, res) => res.end("ok"), { host: "127.0.0.1", port: 0, tls: undefined, backlog: 1234 });
    const plain = await listenEdge((_req, res) => res.end("ok"), { host: "127.0.0.1", port: 0, tls: undefined });
    try {
      expect(kernelBacklog(configured.port)).toBe(1234);
      expect(kernelBacklog(plain.port)).toBe(511);
      expect(await answer(configured.url)).toBe("ok");
    } finally {
      await configured.close();
      await plain.close();
    }
  });
});

/** The LISTEN sockets on 127.0.0.1:port, as the kernel lists them. */
function listeningSockets(port: number): number {
  return execFileSync("ss", ["-ltnH", `sport = :${port}`], { encoding: "utf8" }).trim().split("\n").filter((l) => l.startsWith("LISTEN")).length;
}

describe("listenEdge's listening sockets (GATEWAY_LISTEN_SOCKETS)", () => {
  it.runIf(process.platform === "linux")("holds the port with that many sockets, serves connections through all of them, and closes them all", async () => {
    const edge = await listenEdge((_req, res) => res.end("ok"), { host: "127.0.0.1", port: 0, tls: undefined, backlog: 1234, sockets: 4 });
    try {
      expect(listeningSockets(edge.port)).toBe(4);
      expect(kernelBacklog(edge.port)).toBe(1234);
      // The kernel spreads connections over the sockets by their addresses: many, each answered.
      const answers = await Promise.all(Array.from({ length: 40 }, () => answer(edge.url)));
      expect(answers.every((a) => a === "ok")).toBe(true);
      await edge.stopAccepting();
      expect(listeningSockets(edge.port)).toBe(0);
    } finally {
      await edge.close();
    }
  });

  it.runIf(process.platform === "linux")("refuses a port another listener holds (EADDRINUSE), although its sockets would share it", async () => {
    const first = await listenEdge((_req, res) => res.end("first"), { host: "127.0.0.1", port: 0, tls: undefined, sockets: 4 });
    try {
      await expect(listenEdge((_req, res) => res.end("second"), { host: "127.0.0.1", port: first.port, tls: undefined, sockets: 4 })).rejects.toMatchObject({ code: "EADDRINUSE" });
      expect(listeningSockets(first.port)).toBe(4);
      expect(await answer(first.url)).toBe("first");
    } finally {
      await first.close();
    }
  });

  it("is one socket by default", async () => {
    const edge = await listenEdge((_req, res) => res.end("ok"), { host: "127.0.0.1", port: 0, tls: undefined });
    try {
      expect(listeningSockets(edge.port)).toBe(1);
    } finally {
      await edge.close();
    }
  });
});

describe("listenEdge's HTTP/1.1 connections", () => {
  /** A request on `agent` (keep-alive: the connection stays open afterwards); resolves with the response and its socket. */
  const request = (url: string, agent: Agent | false) =>
    new Promise<{ res: IncomingMessage; socket: Socket }>((resolve, reject) => {
      const req = get(url, { agent }, (res) => resolve({ res, socket: req.socket as Socket }));
      req.on("error", reject);
    });
  const body = async (res: IncomingMessage) => {
    let text = "";
    for await (const c of res) text += String(c);
    return text;
  };

  it("close() closes idle keep-alive connections", async () => {
    const edge = await listenEdge((_req, res) => res.end("ok"), { host: "127.0.0.1", port: 0, tls: undefined });
    // No keep-alive timer: only close() can end the idle connection (else it would hang here).
    edge.http1.keepAliveTimeout = 0;
    const agent = new Agent({ keepAlive: true });
    try {
      const { res, socket } = await request(`${edge.url}/x`, agent);
      expect(await body(res)).toBe("ok");
      const closed = once(socket, "close");
      await edge.close();
      await closed;
    } finally {
      agent.destroy();
    }
  });

  it("drain: closeIdleConnections closes idle keep-alive connections while a response in flight finishes", async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const edge = await listenEdge((req, res) => {
      if (req.url !== "/slow") return void res.end("ok");
      res.write("first ");
      void released.then(() => res.end("last"));
    }, { host: "127.0.0.1", port: 0, tls: undefined });
    edge.http1.keepAliveTimeout = 0;
    const agent = new Agent({ keepAlive: true });
    try {
      const idle = await request(`${edge.url}/x`, agent);
      expect(await body(idle.res)).toBe("ok");
      const slow = await request(`${edge.url}/slow`, false);
      const slowBody = body(slow.res);
      const idleClosed = once(idle.socket, "close");
      const stopped = edge.stopAccepting();
      edge.http1.closeIdleConnections();
      await idleClosed;
      expect(slow.socket.destroyed).toBe(false);
      release();
      expect(await slowBody).toBe("first last");
      await stopped;
    } finally {
      agent.destroy();
      await edge.close();
    }
  });
});

describe("listenEdge with a client that resets its connection", () => {
  it("before sending a byte (while the listener looks for the h2 preface): the process keeps serving", async () => {
    const edge = await listenEdge((_req, res) => res.end("still here"), { host: "127.0.0.1", port: 0, tls: undefined });
    const crashes: unknown[] = [];
    const onCrash = (err: unknown) => void crashes.push(err);
    process.on("uncaughtException", onCrash);
    try {
      for (let i = 0; i < 5; i++) {
        const socket = netConnect(edge.port, "127.0.0.1");
        await once(socket, "connect");
        await new Promise((r) => setTimeout(r, 20)); // accepted, waiting for its first bytes
        socket.resetAndDestroy(); // TCP RST: the server's read fails with ECONNRESET
        await once(socket, "close");
      }
      await new Promise((r) => setTimeout(r, 50));
      expect(crashes).toEqual([]);
      expect(await answer(edge.url)).toBe("still here");
    } finally {
      process.off("uncaughtException", onCrash);
      await edge.close();
    }
  });
});
