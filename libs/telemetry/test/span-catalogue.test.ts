// The span catalogue holds (docs/observability.md "Traces"): every span name in SPAN and every
// GenAI operation is started by some source file of the repository and checked by some test
// file, and the documented span table lists exactly these names.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { GENAI_OPERATION, SPAN } from "../src/index.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (f === "node_modules" || f === "dist" || f.startsWith(".")) return [];
    if (statSync(p).isDirectory()) return tsFiles(p);
    return f.endsWith(".ts") && !f.endsWith(".d.ts") ? [p] : [];
  });
}

const all = ["libs", "services", "deploy"].flatMap((d) => tsFiles(join(ROOT, d)));
const isTest = (f: string) => f.endsWith(".test.ts") || /[/\\]test[/\\]/.test(f);
// The catalogue itself neither starts nor checks anything.
const sources = all.filter((f) => !isTest(f) && !f.includes(join("libs", "telemetry", "src", "tracing", "span-names.ts"))).map((f) => readFileSync(f, "utf8"));
const tests = all.filter(isTest).filter((f) => !f.endsWith("span-catalogue.test.ts")).map((f) => readFileSync(f, "utf8"));

describe("span catalogue", () => {
  it("every SPAN name is started in source and asserted in a test (by its constant or its name)", () => {
    const unstarted: string[] = [];
    const unchecked: string[] = [];
    for (const [key, name] of Object.entries(SPAN)) {
      const started = sources.some((s) => new RegExp(`SPAN\\.${key}\\b`).test(s));
      if (!started) unstarted.push(name);
      if (!tests.some((t) => new RegExp(`SPAN\\.${key}\\b`).test(t) || t.includes(`"${name}"`))) unchecked.push(name);
    }
    expect(unstarted).toEqual([]);
    expect(unchecked).toEqual([]);
  });

  it("every GenAI operation starts spans in source and a test checks a span of it by name", () => {
    for (const [key, op] of Object.entries(GENAI_OPERATION)) {
      expect(sources.some((s) => s.includes(`GENAI_OPERATION.${key}`)), op).toBe(true);
      expect(tests.some((t) => new RegExp(`["'\`]${op} [A-Za-z]`).test(t)), op).toBe(true);
    }
  });

  it("docs/observability.md's span table lists exactly the catalogue", () => {
    const doc = readFileSync(join(ROOT, "docs/observability.md"), "utf8");
    const table = doc.slice(doc.indexOf("| span | kind |"));
    const documented = [...table.matchAll(/^\| `([^`]+)` \| [A-Z]+ \|/gm)].map((m) => m[1]!);
    const expected = [...Object.values(SPAN), ...Object.values(GENAI_OPERATION).map((op) => `${op} {${op === "chat" ? "gen_ai.request.model" : "gen_ai.tool.name"}}`)];
    expect(documented.sort()).toEqual(expected.sort());
  });
});
