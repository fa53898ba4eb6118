// `npm start` (the embedded gateway as its own process) exports its spans over OTLP/HTTP as the
// standard OTEL_* variables say: a local collector stand-in receives the protobuf export, with
// the resource the variables set.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage, watchOutput } from "@byok/testing";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

interface Export {
  path: string;
  contentType: string | undefined;
  body: Buffer;
}

describe("OTLP export from the embedded gateway process", () => {
  let collector: Server;
  let collectorUrl: string;
  const exports: Export[] = [];
  const schemas: string[] = [];

  beforeAll(async () => {
    collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        exports.push({ path: req.url ?? "", contentType: req.headers["content-type"], body: Buffer.concat(chunks) });
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      });
    });
    await new Promise<void>((r) => collector.listen(0, "127.0.0.1", () => r()));
    collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => collector.close(() => r()));
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await client.end();
  });

  async function gateway(env: Record<string, string>) {
    const schema = `t_otlp_${randomUUID().slice(0, 8)}`;
    schemas.push(schema);
    const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
      cwd: ROOT,
      env: { ...process.env, GATEWAY_PORT: "0", DATABASE_URL, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = watchOutput(child, "gateway");
    const line = await out.waitForLine(/listening on http:\/\/\S+/, 90_000);
    const url = /listening on (http:\/\/\S+)/.exec(line)![1]!;
    return { url, out, stop: async () => (child.kill("SIGTERM"), await out.exited) };
  }

  it("exports a turn's spans to OTEL_EXPORTER_OTLP_ENDPOINT with the resource of OTEL_RESOURCE_ATTRIBUTES", async () => {
    const on = await gateway({
      OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=otlp-test",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    });
    try {
      // A model without a route: the run ends at once, its spans end with it.
      const r = await createCursorClient({ baseUrl: on.url }).runTurn({
        requestId: `otlp-${randomUUID()}`,
        message: runRequestMessage({ text: "hi", conversationId: `c-${randomUUID()}`, modelId: "no-such-model" }),
      });
      expect(r.end).toMatchObject({ ok: false });
      const deadline = Date.now() + 20_000;
      const text = () => Buffer.concat(exports.map((e) => e.body)).toString("latin1");
      while (!(text().includes("gateway.run") && text().includes("gateway.bidi_append")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await on.stop();
    }
    expect(exports.length).toBeGreaterThan(0);
    for (const e of exports) expect([e.path, e.contentType]).toEqual(["/v1/traces", "application/x-protobuf"]);
    const body = Buffer.concat(exports.map((e) => e.body)).toString("latin1");
    for (const s of ["gateway.bidi_append", "gateway.bus.append_input", "gateway.run", "gateway.run_sse", "otlp-test"]) expect(body).toContain(s);
    // service.name defaults to the process's role.
    expect(body).toMatch(/service\.name.{2,6}gateway/s);
  }, 180_000);
});
