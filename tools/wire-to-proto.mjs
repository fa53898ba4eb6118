#!/usr/bin/env node
// Writes the project's .proto sources from the wire facts file
// (proto/wire-facts/cursor-agent-wire.json, a copy of ../shared/wire/cursor-agent-wire.json).
// Field numbers, types, labels and oneofs are taken from the facts, never typed by hand.
// Usage: node tools/wire-to-proto.mjs [--facts path] [--check]
//   --check  exits 1 when the committed .proto files differ from what the facts produce.
import { readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const factsArg = args.indexOf("--facts");
const vendored = join(root, "proto/wire-facts/cursor-agent-wire.json");
const shared = resolve(root, "../shared/wire/cursor-agent-wire.json");
const factsPath = factsArg >= 0 ? resolve(args[factsArg + 1]) : vendored;
const check = args.includes("--check");

if (factsArg < 0 && existsSync(shared)) {
  // Keep the vendored copy equal to the shared source of truth whenever it is reachable.
  const a = readFileSync(shared, "utf8");
  if (!existsSync(vendored) || readFileSync(vendored, "utf8") !== a) {
    if (check) fail(`${vendored} differs from ${shared}; run npm run generate`);
    mkdirSync(dirname(vendored), { recursive: true });
    writeFileSync(vendored, a);
  }
}

const facts = JSON.parse(readFileSync(factsPath, "utf8"));

const WKT_IMPORTS = {
  "google.protobuf.Struct": "google/protobuf/struct.proto",
  "google.protobuf.Value": "google/protobuf/struct.proto",
  "google.protobuf.Timestamp": "google/protobuf/timestamp.proto",
  "google.protobuf.Duration": "google/protobuf/duration.proto",
  "google.protobuf.Empty": "google/protobuf/empty.proto",
};

const SCALARS = new Set([
  "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
  "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
]);

/** Fully-qualified reference with a leading dot, so protoc never resolves relative to scope. */
function typeRef(type, imports) {
  if (SCALARS.has(type)) return type;
  if (WKT_IMPORTS[type]) imports.add(WKT_IMPORTS[type]);
  return "." + type;
}

function fieldLine(f, imports, indent) {
  const opts = "";
  if (f.kind === "map") {
    return `${indent}map<${f.map_key}, ${typeRef(f.map_value, imports)}> ${f.name} = ${f.number}${opts};`;
  }
  const t = typeRef(f.type, imports);
  const label = f.oneof ? "" : f.label === "optional" ? "optional " : f.label === "repeated" ? "repeated " : "";
  return `${indent}${label}${t} ${f.name} = ${f.number}${opts};`;
}

/** Builds a tree of messages and enums keyed by their package-relative dotted names. */
function buildTree(pkg) {
  const rootNode = { children: new Map(), enums: new Map() };
  const nodeFor = (path) => {
    let n = rootNode;
    for (const part of path) {
      if (!n.children.has(part)) n.children.set(part, { children: new Map(), enums: new Map(), def: null });
      n = n.children.get(part);
    }
    return n;
  };
  for (const [name, def] of Object.entries(pkg.messages)) nodeFor(name.split(".")).def = def;
  for (const [name, values] of Object.entries(pkg.enums)) {
    const parts = name.split(".");
    nodeFor(parts.slice(0, -1)).enums.set(parts.at(-1), values);
  }
  return rootNode;
}

function emitEnum(name, values, indent, out) {
  const entries = Object.entries(values);
  const aliased = new Set(entries.map(([, v]) => v)).size !== entries.length;
  out.push(`${indent}enum ${name} {`);
  if (aliased) out.push(`${indent}  option allow_alias = true;`);
  // proto3 requires the zero value first.
  entries.sort((a, b) => (a[1] === 0 ? -1 : b[1] === 0 ? 1 : 0));
  for (const [k, v] of entries) out.push(`${indent}  ${k} = ${v};`);
  out.push(`${indent}}`);
}

function emitMessage(name, node, indent, imports, out) {
  out.push(`${indent}message ${name} {`);
  const inner = indent + "  ";
  const fields = node.def?.fields ?? [];
  const oneofOrder = [];
  for (const f of fields) if (f.oneof && !oneofOrder.includes(f.oneof)) oneofOrder.push(f.oneof);
  for (const f of fields) if (!f.oneof) out.push(fieldLine(f, imports, inner));
  for (const o of oneofOrder) {
    out.push(`${inner}oneof ${o} {`);
    for (const f of fields) if (f.oneof === o) out.push(fieldLine(f, imports, inner + "  "));
    out.push(`${inner}}`);
  }
  for (const [en, values] of node.enums) emitEnum(en, values, inner, out);
  for (const [cn, child] of node.children) emitMessage(cn, child, inner, imports, out);
  out.push(`${indent}}`);
}

function emitPackage(pkgName, pkg) {
  const imports = new Set();
  const body = [];
  const tree = buildTree(pkg);
  for (const [en, values] of tree.enums) emitEnum(en, values, "", body);
  for (const [name, node] of tree.children) emitMessage(name, node, "", imports, body);
  for (const [svc, rpcs] of Object.entries(pkg.services ?? {})) {
    body.push(`service ${svc} {`);
    for (const [rpc, r] of Object.entries(rpcs)) {
      const inS = r.client_streaming ? "stream " : "";
      const outS = r.server_streaming ? "stream " : "";
      body.push(`  rpc ${rpc}(${inS}.${r.input}) returns (${outS}.${r.output});`);
    }
    body.push(`}`);
  }
  const head = [
    "// @generated by tools/wire-to-proto.mjs from proto/wire-facts/cursor-agent-wire.json. DO NOT EDIT.",
    'syntax = "proto3";',
    "",
    `package ${pkgName};`,
    "",
    ...[...imports].sort().map((i) => `import "${i}";`),
    "",
  ];
  return head.concat(body).join("\n") + "\n";
}

function fail(msg) {
  console.error(msg);
  process.exit(1);
}

let stale = false;
for (const [pkgName, pkg] of Object.entries(facts.packages)) {
  const file = join(root, "proto", ...pkgName.split("."), `${pkgName.split(".")[0]}.proto`);
  const text = emitPackage(pkgName, pkg);
  if (check) {
    if (!existsSync(file) || readFileSync(file, "utf8") !== text) {
      console.error(`stale: ${file}`);
      stale = true;
    }
    continue;
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
if (stale) fail("generated .proto sources are stale; run npm run generate");
