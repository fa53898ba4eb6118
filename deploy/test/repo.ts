// Paths and facts of the repository that the deployment tests read.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The processes the image offers (`byok <process>`), read from the entry point's table. */
export function imageProcesses(): string[] {
  const text = readFileSync(join(ROOT, "bin/byok.mjs"), "utf8");
  return [...text.matchAll(/^\s+(\w+): "services\/\w+\/dist\/main\.js",$/gm)].map((m) => m[1]!);
}
