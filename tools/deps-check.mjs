#!/usr/bin/env node
// Declared dependencies match imports, in every workspace: what `src/` imports is in
// `dependencies`, what only tests import is in `devDependencies` (or `dependencies`), and
// nothing is declared that no file imports. Test tools shared by every workspace are the root's devDependencies. Part of `npm test` (it
// reads files, runs nothing).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const rootPkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const rootDev = new Set(Object.keys(rootPkg.devDependencies ?? {}));
const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/**
 * Declared for a reason other than an import: type packages that type a dependency, packages a
 * workspace needs at run time without importing them (loaded by name, or a peer of an SDK).
 */
const NOT_IMPORTED = {
  "@byok/store": ["@types/pg"],
};

function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (f === "node_modules" || f === "dist") return [];
    if (statSync(p).isDirectory()) return files(p);
    return /\.(ts|mts|mjs|js|tsx)$/.test(f) && !f.endsWith(".d.ts") ? [p] : [];
  });
}

/** Package names a file imports (static, dynamic, re-exports; type-only imports count). */
function importsOf(file) {
  const src = readFileSync(file, "utf8");
  const names = new Set();
  const statements = /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([\w@][\w@./:-]*)["']|^\s*import\s*["']([\w@][\w@./:-]*)["']|\bimport\s*\(\s*["']([\w@][\w@./:-]*)["']\s*\)|\b(?:require(?:\.resolve)?|createRequire\([^)]*\))\s*\(\s*["'`]([\w@][\w@./:-]*)/gm;
  for (const m of src.matchAll(statements)) {
    const spec = m[1] ?? m[2] ?? m[3] ?? m[4];
    if (builtins.has(spec) || builtins.has(spec.split("/")[0])) continue;
    const parts = spec.split("/");
    names.add(spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]);
  }
  return names;
}

function workspaces() {
  return rootPkg.workspaces.flatMap((pattern) => {
    if (!pattern.endsWith("/*")) return [pattern];
    const base = pattern.slice(0, -2);
    return readdirSync(join(root, base)).map((d) => `${base}/${d}`).filter((d) => existsSync(join(root, d, "package.json")));
  });
}

const problems = [];
for (const dir of workspaces()) {
  const pkg = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
  const deps = new Set(Object.keys(pkg.dependencies ?? {}));
  const dev = new Set(Object.keys(pkg.devDependencies ?? {}));
  const production = new Set();
  const all = new Set();
  for (const f of files(join(root, dir))) {
    const rel = relative(join(root, dir), f);
    const isSource = rel.startsWith("src/") && !/\.test\.[a-z]+$/.test(rel);
    for (const name of importsOf(f)) {
      if (name === pkg.name) continue;
      all.add(name);
      if (isSource) production.add(name);
      if (isSource && !deps.has(name)) problems.push(`${dir}: ${rel} imports ${name}, not in dependencies${dev.has(name) ? " (it is a devDependency)" : ""}`);
      // Test tools (vitest, fast-check, testcontainers …) are the root's devDependencies, shared by every workspace.
      else if (!isSource && !deps.has(name) && !dev.has(name) && !rootDev.has(name)) problems.push(`${dir}: ${rel} imports ${name}, not declared`);
    }
  }
  const allowed = new Set(NOT_IMPORTED[pkg.name] ?? []);
  for (const name of deps) if (!production.has(name) && !allowed.has(name)) problems.push(`${dir}: dependency ${name} is imported by no file in src/${all.has(name) ? " (only tests: make it a devDependency)" : ""}`);
  for (const name of dev) if (!all.has(name) && !allowed.has(name)) problems.push(`${dir}: devDependency ${name} is imported by no file`);
}

if (problems.length) {
  console.error(`Declared dependencies do not match imports:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log("deps-check: declared dependencies match imports in every workspace");
