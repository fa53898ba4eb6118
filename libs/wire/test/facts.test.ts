// Checks every message, field number, type, label and oneof of the generated descriptors
// against the wire facts file, and every enum value, service and rpc.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { createWireRegistry } from "../src/index.js";

interface FactField {
  name: string;
  number: number;
  type: string;
  kind: string;
  label: string;
  oneof: string | null;
  map_key?: string;
  map_value?: string;
}
interface FactsPackage {
  messages: Record<string, { fields: FactField[] }>;
  enums: Record<string, Record<string, number>>;
  services?: Record<string, Record<string, { input: string; output: string; client_streaming: boolean; server_streaming: boolean }>>;
}

const root = resolve(import.meta.dirname, "../../..");
const facts = JSON.parse(readFileSync(resolve(root, "proto/wire-facts/cursor-agent-wire.json"), "utf8")) as {
  packages: Record<string, FactsPackage>;
};
const registry = createWireRegistry();

function scalarName(t: ScalarType): string {
  return ScalarType[t].toLowerCase();
}

function typeOf(f: DescField): string {
  switch (f.fieldKind) {
    case "scalar":
      return scalarName(f.scalar);
    case "enum":
      return f.enum.typeName;
    case "message":
      return f.message.typeName;
    case "list":
      return f.listKind === "scalar" ? scalarName(f.scalar) : f.listKind === "enum" ? f.enum.typeName : f.message.typeName;
    case "map": {
      const v = f.mapKind === "scalar" ? scalarName(f.scalar) : f.mapKind === "enum" ? f.enum.typeName : f.message.typeName;
      return `map<${scalarName(f.mapKey)},${v}>`;
    }
  }
}

function labelOf(f: DescField): string {
  if (f.fieldKind === "map") return "map";
  if (f.fieldKind === "list") return "repeated";
  if (f.oneof) return "singular";
  return f.proto.proto3Optional ? "optional" : "singular";
}

describe("generated descriptors match ../shared/wire facts", () => {
  const shared = resolve(root, "../shared/wire/cursor-agent-wire.json");
  it("vendored facts equal the shared facts when present", () => {
    let sharedText: string | undefined;
    try {
      sharedText = readFileSync(shared, "utf8");
    } catch {
      return; // not beside a steering checkout; the vendored copy is the source
    }
    expect(readFileSync(resolve(root, "proto/wire-facts/cursor-agent-wire.json"), "utf8")).toBe(sharedText);
  });

  for (const [pkgName, pkg] of Object.entries(facts.packages)) {
    it(`${pkgName}: every message, field, type, label and oneof`, () => {
      let checked = 0;
      for (const [msgName, def] of Object.entries(pkg.messages)) {
        const desc = registry.getMessage(`${pkgName}.${msgName}`) as DescMessage | undefined;
        expect(desc, `${pkgName}.${msgName}`).toBeDefined();
        if (!desc) continue;
        expect(desc.fields.length, `${desc.typeName} field count`).toBe(def.fields.length);
        for (const ff of def.fields) {
          const f = desc.fields.find((x) => x.name === ff.name);
          expect(f, `${desc.typeName}.${ff.name}`).toBeDefined();
          if (!f) continue;
          const where = `${desc.typeName}.${ff.name}`;
          expect(f.number, where).toBe(ff.number);
          expect(labelOf(f), where).toBe(ff.label);
          expect(f.oneof?.name ?? null, where).toBe(ff.oneof);
          expect(typeOf(f), where).toBe(ff.type.replace(/\s/g, ""));
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(0);
    });

    it(`${pkgName}: every enum value`, () => {
      for (const [enumName, values] of Object.entries(pkg.enums)) {
        const e = registry.getEnum(`${pkgName}.${enumName}`);
        expect(e, enumName).toBeDefined();
        const got = Object.fromEntries(e!.values.map((v) => [v.name, v.number]));
        expect(got, enumName).toEqual(values);
      }
    });

    it(`${pkgName}: services and rpcs`, () => {
      for (const [svcName, rpcs] of Object.entries(pkg.services ?? {})) {
        const s = registry.getService(`${pkgName}.${svcName}`);
        expect(s, svcName).toBeDefined();
        expect(s!.methods.length).toBe(Object.keys(rpcs).length);
        for (const [rpc, r] of Object.entries(rpcs)) {
          const m = s!.methods.find((x) => x.name === rpc);
          expect(m, rpc).toBeDefined();
          expect(m!.input.typeName).toBe(r.input);
          expect(m!.output.typeName).toBe(r.output);
          const kind = r.client_streaming ? (r.server_streaming ? "bidi_streaming" : "client_streaming") : r.server_streaming ? "server_streaming" : "unary";
          expect(m!.methodKind).toBe(kind);
        }
      }
    });
  }
});
