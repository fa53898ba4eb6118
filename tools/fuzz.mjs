// `npm run fuzz`: the property-based suites with FUZZ_SCALE times their CI cases (default 40),
// printing the cases each property ran and the total. Exits with vitest's status.
import { spawn } from "node:child_process";

const FILES = [
  "libs/wire/test/fuzz.test.ts",
  "libs/protocol/test/fuzz-decode.test.ts",
  "libs/bus/test/gate-fuzz.test.ts",
  "libs/edge/src/request-messages.test.ts",
  "services/gateway/test/malformed-input.test.ts",
];
const scale = process.env.FUZZ_SCALE ?? "40";
const child = spawn("npx", ["vitest", "run", ...FILES, "--testTimeout=3600000", "--hookTimeout=120000"], {
  env: { ...process.env, FUZZ_SCALE: scale, FORCE_COLOR: "0" },
  stdio: ["ignore", "pipe", "inherit"],
});
const counts = new Map();
let buf = "";
child.stdout.on("data", (chunk) => {
  process.stdout.write(chunk);
  buf += chunk.toString("utf8");
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    // eslint-disable-next-line no-control-regex
    const line = buf.slice(0, nl).replace(/\u001b\[[0-9;]*m/g, "");
    buf = buf.slice(nl + 1);
    const m = /FUZZ_CASES (\S+) (\d+)/.exec(line);
    if (m) counts.set(m[1], (counts.get(m[1]) ?? 0) + Number(m[2]));
  }
});
child.on("exit", (code) => {
  let total = 0;
  console.log(`\nfuzz cases (FUZZ_SCALE=${scale}):`);
  for (const [name, n] of counts) {
    total += n;
    console.log(`  ${name.padEnd(34)} ${n}`);
  }
  console.log(`  ${"total".padEnd(34)} ${total}`);
  process.exit(code ?? 1);
});
