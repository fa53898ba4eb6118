/**
 * Sizes of the property-based (fast-check) suites: the CI default, multiplied by `FUZZ_SCALE`
 * for the long run (`npm run fuzz`). Each property reports the cases it ran, so the counts of a
 * run can be added up (docs/reliability.md).
 */
export function fuzzRuns(ciRuns: number): number {
  const scale = Number(process.env.FUZZ_SCALE ?? "1");
  return Math.max(1, Math.round(ciRuns * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}

/** Prints one machine-readable count line: `FUZZ_CASES <property> <n>`. */
export function reportFuzzCases(property: string, cases: number): void {
  console.log(`FUZZ_CASES ${property} ${cases}`);
}
