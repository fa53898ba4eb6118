import type { RunEngine, RunEngineDeps } from "./ports.js";
import { GenerationRun } from "./run/generation-run.js";

/** The run engine: every generation is one GenerationRun (see run/). */
export function createRunEngine(deps: RunEngineDeps): RunEngine {
  return { runGeneration: (ref, generation, signal, job) => new GenerationRun(deps, ref, generation, signal, job?.trace).run() };
}
