import type { Bus, RequestRef } from "@byok/bus";
import { encodeErrorDetails, endFor, type GatewayError, type RunError } from "@byok/protocol";
import { isStoreUnavailable } from "@byok/store";

/** What a reader is told when the gateway itself failed the run (a bug, not the client's fault). */
export const INTERNAL_RUN_ERROR: RunError = {
  kind: "internal",
  message: "The gateway hit an internal error while running this request; please retry.",
};

/** What a reader is told when the run failed because the gateway's database could not be reached. */
const STORE_UNAVAILABLE_RUN_ERROR: GatewayError = {
  kind: "gateway_unavailable",
  message: "The gateway's database was unavailable while running this request; retry shortly.",
};

/** The end for a run whose engine threw `err`: `unavailable` when the database was unreachable, else internal. */
export function failedRunError(err: unknown): GatewayError {
  return isStoreUnavailable(err) ? STORE_UNAVAILABLE_RUN_ERROR : INTERNAL_RUN_ERROR;
}

/**
 * Ends a generation whose run cannot go on — the engine threw (embedded mode), or its job
 * failed its last attempt (distributed mode) — so its readers get a status with
 * `aiserver.v1.ErrorDetails` instead of heartbeats forever. Claiming first fences whatever is
 * left of the failed owner. A generation that already ended (or was superseded) is left alone.
 */
export async function endFailedGeneration(bus: Bus, ref: RequestRef, generation: number, error: GatewayError = INTERNAL_RUN_ERROR): Promise<void> {
  const info = await bus.latestGeneration(ref);
  if (!info || info.generation !== generation || info.ended) return;
  const epoch = (await bus.claim(ref, generation)).epoch;
  const d = endFor(error);
  await bus.endOutput(ref, generation, epoch, {
    ok: false,
    ...(d.code ? { code: d.code } : {}),
    ...(d.message ? { message: d.message } : {}),
    ...(d.detail ? { errorDetails: encodeErrorDetails(d.detail) } : {}),
  });
}
