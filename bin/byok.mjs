#!/usr/bin/env node
// The image's entry point: `byok <process>` runs one gateway process from the compiled build
// (`npm run build`) in this Node process, so Node is PID 1 and the process's own SIGTERM
// handler drains and exits. Start it as
//   node --conditions=byok-dist --enable-source-maps bin/byok.mjs <process>
// `--conditions=byok-dist` makes every @byok/* import load dist/ instead of src/.

/** Process name → its compiled main. */
export const PROCESSES = {
  gateway: "services/gateway/dist/main.js",
  ingress: "services/ingress/dist/main.js",
  worker: "services/worker/dist/main.js",
  admin: "services/admin/dist/main.js",
  migrate: "services/migrate/dist/main.js",
};

const name = process.argv[2];
if (name === undefined || !Object.hasOwn(PROCESSES, name)) {
  console.error(`usage: byok <${Object.keys(PROCESSES).join("|")}>${name === undefined ? "" : ` (unknown process ${JSON.stringify(name)})`}`);
  process.exit(64);
}
// Without the condition the @byok/* packages resolve to TypeScript sources: refuse, rather than
// run half-compiled or fail later on the first .ts import.
const resolved = import.meta.resolve("@byok/config");
if (!resolved.endsWith("/dist/index.js")) {
  console.error(`byok: @byok/* resolves to ${resolved}; start node with --conditions=byok-dist (and run npm run build first)`);
  process.exit(64);
}
await import(new URL(`../${PROCESSES[name]}`, import.meta.url).href);
