/**
 * A claim on a generation the bus no longer (or never) held: it expired with its request, or
 * was never created. Nothing can run it, so a job holding it must not be retried.
 */
export class GenerationGoneError extends Error {
  constructor(
    readonly generation: number,
    readonly reason: "missing" | "expired",
  ) {
    super(`generation ${generation} of request ${reason === "missing" ? "does not exist" : "has expired"}`);
    this.name = "GenerationGoneError";
  }
}
