import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { trace } from "@opentelemetry/api";
import { createLogger, createMemoryTracing, createSecretSet, registerSecret, scrubSecrets, scrubText, REDACTED } from "../src/index.js";

/** A destination that keeps every written line. */
function memoryDestination(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString("utf8").split("\n").filter((l) => l.length > 0));
      cb();
    },
  });
  return { lines, stream };
}

const OPENAI = "sk-proj-Abc123DEF456ghi789JKL012mno345";
const ANTHROPIC = "sk-ant-api03-ZZxxYY1122334455667788-_abcd";
const AWS_ID = "AKIAIOSFODNN7EXAMPLE";
const AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const SESSION = "FwoGZXIvYXdzEBYaDHqa0AP1/session/token/value";
const BEARER = "gw_tok_9f8e7d6c5b4a39281706";
const BLOB_KEY = "a".repeat(32) + "b".repeat(32);
const PASSWORD = "hunter2-correct-horse";
const PLAIN_SECRET = "my-plain-looking-byok-value-42"; // no pattern matches: only registration catches it
const ALL = [OPENAI, ANTHROPIC, AWS_ID, AWS_SECRET, SESSION, BEARER, BLOB_KEY, PASSWORD, PLAIN_SECRET];

function assertClean(lines: string[]): void {
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) for (const s of ALL) expect(line, `line leaked ${s}`).not.toContain(s);
}

describe("createLogger", () => {
  it("puts the active span's trace_id and span_id on every line inside it (secrets still removed), none outside", async () => {
    const tracing = createMemoryTracing();
    try {
      const { lines, stream } = memoryDestination();
      const log = createLogger({ service: "test", destination: stream }).child({ tenant: "acme", model: "gpt-5" });
      const ids = trace.getTracer("test").startActiveSpan("outer", (span) => {
        log.info({ apiKey: OPENAI }, `inside with ${ANTHROPIC}`);
        span.end();
        return span.spanContext();
      });
      log.info("outside");
      assertClean(lines);
      const [inside, outside] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(inside).toMatchObject({ trace_id: ids.traceId, span_id: ids.spanId, trace_flags: "01", tenant: "acme", model: "gpt-5" });
      expect(outside).not.toHaveProperty("trace_id");
    } finally {
      await tracing.shutdown();
    }
  });

  it("never writes secrets under any key shape, depth, error or message", () => {
    const secrets = createSecretSet();
    const release = secrets.register(PLAIN_SECRET);
    const { lines, stream } = memoryDestination();
    const log = createLogger({ service: "test", level: "debug", destination: stream, secrets });

    log.info({ authorization: `Bearer ${BEARER}` }, "auth header");
    log.info({ headers: { Authorization: `Bearer ${BEARER}`, "x-api-key": OPENAI, "x-blob-encryption-key": BLOB_KEY } }, "headers");
    log.info({ req: { headers: { authorization: `Bearer ${BEARER}` } } }, "req");
    log.info({ api_key: OPENAI, apiKey: ANTHROPIC, API_KEY: OPENAI, openaiApiKey: OPENAI }, "api keys");
    log.info({ access_key: AWS_ID, accessKey: AWS_ID, secretKey: AWS_SECRET, secret_access_key: AWS_SECRET, session_token: SESSION, sessionToken: SESSION }, "aws");
    log.info({ password: PASSWORD, token: BEARER, secret: PLAIN_SECRET, secrets: [PLAIN_SECRET] }, "misc");
    log.info({ requestedModel: { modelId: "gpt", credentials: { case: "bedrockCredentials", value: { accessKey: AWS_ID, secretKey: AWS_SECRET, sessionToken: SESSION } } } }, "proto");
    log.info({ a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { k: AWS_SECRET } } } } } } } } } } }, "very deep");
    log.info({ list: [{ nested: [{ apiKey: OPENAI }] }, `Bearer ${BEARER}`, ANTHROPIC] }, "arrays");
    log.info({ map: new Map([["apiKey", OPENAI], ["note", `uses ${ANTHROPIC}`]]) }, "map");
    log.info({ text: `the key is ${OPENAI} and ${AWS_ID} and ${PLAIN_SECRET}` }, "free text");
    log.info(`message string with ${OPENAI} and Bearer ${BEARER} and ${PLAIN_SECRET}`);
    log.info("printf %s %s", ANTHROPIC, PLAIN_SECRET);
    log.info({ bytes: new TextEncoder().encode(`apiKey=${OPENAI}`) }, "bytes");

    const err = new Error(`provider rejected key ${OPENAI} (${PLAIN_SECRET})`, { cause: new Error(`inner ${ANTHROPIC}`) });
    Object.assign(err, { apiKey: OPENAI, response: { body: `invalid x-api-key ${ANTHROPIC}` } });
    log.error({ err }, "provider error");
    log.error(err);
    log.error({ error: new TypeError(`bad ${AWS_ID}`) }, "other key");
    const cyclic: Record<string, unknown> = { apiKey: OPENAI, note: PLAIN_SECRET };
    cyclic.self = cyclic;
    log.warn({ cyclic }, "cyclic");

    const child = log.child({ tenantKey: PLAIN_SECRET, credentials: { apiKey: OPENAI } });
    child.info({ ok: true }, `child ${AWS_ID}`);

    release();
    assertClean(lines);
    // Redaction is visible and the rest of the line survives.
    const auth = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(auth.authorization).toBe(REDACTED);
    expect(auth.service).toBe("test");
    const errLine = JSON.parse(lines.find((l) => l.includes("provider error"))!) as { err: { type: string; message: string; stack: string; cause: { message: string } } };
    expect(errLine.err.type).toBe("Error");
    expect(errLine.err.message).toContain("provider rejected key");
    expect(errLine.err.stack).toContain("provider rejected key");
    expect(errLine.err.cause.message).toContain("inner");
    const bare = JSON.parse(lines.find((l) => l.includes('"level":50') && !l.includes("provider error") && !l.includes("other key"))!) as { msg: string; err: object };
    expect(bare.msg).toContain("provider rejected key");
    expect(bare.err).toBeDefined();
  });

  it("catches a secret registered after a child logger was created (final line pass)", () => {
    const secrets = createSecretSet();
    const { lines, stream } = memoryDestination();
    const child = createLogger({ service: "test", destination: stream, secrets }).child({ tag: PLAIN_SECRET });
    const release = secrets.register(PLAIN_SECRET);
    child.info("after registration");
    release();
    assertClean(lines);
  });

  it("uses the process-wide set through registerSecret, and releases by reference count", () => {
    const { lines, stream } = memoryDestination();
    const log = createLogger({ service: "test", destination: stream });
    const r1 = registerSecret(PLAIN_SECRET);
    const r2 = registerSecret(PLAIN_SECRET);
    r1();
    r1(); // idempotent
    log.info({ value: PLAIN_SECRET }, "still registered");
    r2();
    log.info({ value: PLAIN_SECRET }, "released");
    expect(lines[0]).not.toContain(PLAIN_SECRET);
    expect(lines[1]).toContain(PLAIN_SECRET);
  });
});

describe("scrubSecrets / scrubText", () => {
  it("scrubs patterns without touching ordinary words", () => {
    expect(scrubText(`risk-assessment task-management ${OPENAI}`)).toBe(`risk-assessment task-management ${REDACTED}`);
    expect(scrubText(`Authorization: Bearer ${BEARER}`)).toBe(`Authorization: Bearer ${REDACTED}`);
    expect(scrubText(`id ${AWS_ID}.`)).toBe(`id ${REDACTED}.`);
    expect(scrubText("input_tokens 12, sk-short")).toBe("input_tokens 12, sk-short");
    // Session tokens (JWTs) anywhere in a text, not only after "Bearer".
    const jwt = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIn0.eyJ0aWQiOiJhY21lIiwic3ViIjoiYWNtZS9rZXkveCJ9.c2lnbmF0dXJlLWJ5dGVz";
    expect(scrubText(`refresh failed for ${jwt}; retry`)).toBe(`refresh failed for ${REDACTED}; retry`);
    expect(scrubText("version 1.2.3 of eyJ")).toBe("version 1.2.3 of eyJ");
  });

  it("is pure and redacts by key name", () => {
    const input = { inputTokens: 5, credentials: { apiKey: OPENAI }, nested: { X_API_KEY: "v", keep: "ok" } };
    const copy = structuredClone(input);
    expect(scrubSecrets(input)).toEqual({ inputTokens: 5, credentials: REDACTED, nested: { X_API_KEY: REDACTED, keep: "ok" } });
    expect(input).toEqual(copy);
  });

  it("bounds depth and replaces, never leaks, what it does not walk", () => {
    let deep: Record<string, unknown> = { v: AWS_SECRET };
    for (let i = 0; i < 20; i++) deep = { d: deep };
    expect(JSON.stringify(scrubSecrets(deep, { maxDepth: 5 }))).not.toContain(AWS_SECRET);
  });

  it("ignores too-short registrations", () => {
    const set = createSecretSet();
    set.register("abc");
    expect(set.size).toBe(0);
    expect(set.scrub("abc")).toBe("abc");
  });
});
