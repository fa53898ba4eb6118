// `npm run build`: compiles what the image runs. Every workspace under libs/ and services/ is
// compiled from src/ to dist/ (ES modules, source maps, declarations for the references) by one
// incremental `tsc -b`, and the non-TypeScript files its code reads at run time (Lua scripts)
// are copied beside the JavaScript. Tests and tsx keep running the sources: a package's
// `exports` resolve to dist/ only under the `byok-dist` condition (`node --conditions=byok-dist`),
// which the image's entry point (bin/byok.mjs) sets.
//
// The per-workspace tsc projects are generated into .build/ from each package.json's @byok
// dependencies, so a new workspace needs no hand-written build config; what it does need is the
// `byok-dist` export condition, which this script checks.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const buildDir = join(root, ".build");
export const DIST_CONDITION = "byok-dist";

/** Workspaces that ship code: libs/* and services/* with a src/ folder. */
function workspaces() {
  const out = [];
  for (const group of ["libs", "services"]) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const dir = join(root, group, name);
      if (!existsSync(join(dir, "package.json")) || !existsSync(join(dir, "src"))) continue;
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      out.push({ dir: `${group}/${name}`, pkg });
    }
  }
  return out;
}

function checkExports(ws) {
  const dot = ws.pkg.exports?.["."];
  if (typeof dot !== "object" || dot[DIST_CONDITION] !== "./dist/index.js" || dot.default !== "./src/index.ts") {
    throw new Error(
      `${ws.dir}/package.json: exports["."] must be { "${DIST_CONDITION}": "./dist/index.js", "default": "./src/index.ts" } ` +
        `so the built image loads dist/ while tests and tsx load src/`,
    );
  }
}

const projectFile = (dir) => join(buildDir, `${dir.replace("/", "-")}.json`);

function writeProject(ws, byName) {
  const deps = Object.keys(ws.pkg.dependencies ?? {}).filter((d) => byName.has(d)).sort();
  const rel = (p) => relative(buildDir, join(root, p));
  const config = {
    extends: rel("tsconfig.base.json"),
    compilerOptions: {
      noEmit: false,
      composite: true,
      declaration: true,
      sourceMap: true,
      rootDir: rel(`${ws.dir}/src`),
      outDir: rel(`${ws.dir}/dist`),
    },
    include: [rel(`${ws.dir}/src/**/*.ts`)],
    exclude: [rel(`${ws.dir}/src/**/*.test.ts`), rel(`${ws.dir}/src/**/test-support/**`)],
    references: deps.map((d) => ({ path: `./${byName.get(d).dir.replace("/", "-")}.json` })),
  };
  writeFileSync(projectFile(ws.dir), JSON.stringify(config, null, 2) + "\n");
}

/** Copies every non-TypeScript file under src/ (e.g. redis/lua/*.lua) to the same place in dist/. */
function copyAssets(ws) {
  const walk = (rel) => {
    const from = join(root, ws.dir, "src", rel);
    for (const entry of readdirSync(from)) {
      const r = join(rel, entry);
      const full = join(from, entry);
      if (statSync(full).isDirectory()) walk(r);
      else if (!entry.endsWith(".ts")) {
        const to = join(root, ws.dir, "dist", r);
        mkdirSync(dirname(to), { recursive: true });
        cpSync(full, to);
      }
    }
  };
  walk("");
}

export function build({ clean = false } = {}) {
  const all = workspaces();
  for (const ws of all) checkExports(ws);
  if (clean) {
    rmSync(buildDir, { recursive: true, force: true });
    for (const ws of all) rmSync(join(root, ws.dir, "dist"), { recursive: true, force: true });
  }
  mkdirSync(buildDir, { recursive: true });
  const byName = new Map(all.map((ws) => [ws.pkg.name, ws]));
  for (const ws of all) writeProject(ws, byName);
  writeFileSync(join(buildDir, "tsconfig.json"), JSON.stringify({ files: [], references: all.map((ws) => ({ path: `./${ws.dir.replace("/", "-")}.json` })) }, null, 2) + "\n");
  const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b", join(buildDir, "tsconfig.json")], { cwd: root, stdio: "inherit" });
  if (tsc.status !== 0) throw new Error(`tsc -b failed (exit ${tsc.status ?? tsc.signal})`);
  for (const ws of all) copyAssets(ws);
  return all.map((ws) => ws.dir);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const built = build({ clean: process.argv.includes("--clean") });
    console.log(`built ${built.length} workspaces into */dist`);
  } catch (e) {
    console.error(`build: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
