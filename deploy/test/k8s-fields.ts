// Unknown-field check for rendered Kubernetes objects. The JSON schemas of kubernetes-models
// accept unknown properties (as the OpenAPI does), and the API server drops unknown fields with a
// warning by default, so a misspelt field in a chart would vanish silently. The property names
// of every core type are read from kubernetes-models' own type declarations (one interface per
// OpenAPI definition); inline object types (label maps, CRD specs) are not descended into.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

type FieldType = { kind: "named"; name: string } | { kind: "array"; of: FieldType } | { kind: "opaque" };
type Fields = Map<string, FieldType>;

function parseType(text: string): FieldType {
  const t = text.trim().replace(/;$/, "");
  const array = /^Array<(.+)>$/.exec(t);
  if (array) return { kind: "array", of: parseType(array[1]!) };
  if (/^I[A-Za-z0-9]+$/.test(t)) return { kind: "named", name: t };
  return { kind: "opaque" };
}

function dtsFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const full = join(dir, entry);
    if (entry === "_schemas" || entry === "node_modules") continue;
    if (statSync(full).isDirectory()) dtsFiles(full, out);
    else if (entry.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

/** Interface properties by the global alias each file exports (`IIoK8sApiCoreV1Container` …). */
function readTypes(packages: string[]): Map<string, Fields> {
  const require = createRequire(import.meta.url);
  const types = new Map<string, Fields>();
  for (const pkg of packages) {
    for (const file of dtsFiles(dirname(require.resolve(`${pkg}/package.json`)))) {
      const text = readFileSync(file, "utf8");
      const local = new Map<string, Fields>();
      for (const m of text.matchAll(/^export interface (I\w+)(?: extends [^{]+)? \{\n([\s\S]*?)^\}/gm)) {
        const fields: Fields = new Map();
        for (const p of m[2]!.matchAll(/^ {4}"([^"]+)"\??: (.*)$/gm)) fields.set(p[1]!, parseType(p[2]!));
        local.set(m[1]!, fields);
      }
      for (const m of text.matchAll(/^export type \{ (I\w+) as (I\w+)/gm)) {
        const fields = local.get(m[1]!);
        if (fields) types.set(m[2]!, fields);
      }
    }
  }
  return types;
}

let cache: Map<string, Fields> | undefined;
const allTypes = () => (cache ??= readTypes(["kubernetes-models", "@kubernetes-models/apimachinery"]));

/** The alias of a top-level kind, e.g. apps/v1 Deployment → IIoK8sApiAppsV1Deployment. */
export function rootType(apiVersion: string, kind: string): string | undefined {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["core", apiVersion];
  const groupName = group!.split(".")[0]!.replace(/^./, (c) => c.toUpperCase());
  const name = `IIoK8sApi${groupName}${version!.replace(/^./, (c) => c.toUpperCase())}${kind}`;
  return allTypes().has(name) ? name : undefined;
}

/** Paths of every property of `value` that type `typeName` does not declare. */
export function unknownFields(value: unknown, typeName: string, path = ""): string[] {
  const fields = allTypes().get(typeName);
  if (!fields || typeof value !== "object" || value === null || Array.isArray(value)) return [];
  const problems: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    const type = fields.get(key);
    if (!type) {
      problems.push(`${path}.${key}`);
      continue;
    }
    problems.push(...unknownIn(child, type, `${path}.${key}`));
  }
  return problems;
}

function unknownIn(value: unknown, type: FieldType, path: string): string[] {
  if (type.kind === "named") return unknownFields(value, type.name, path);
  if (type.kind === "array" && Array.isArray(value)) return value.flatMap((v, i) => unknownIn(v, type.of, `${path}[${i}]`));
  return [];
}
