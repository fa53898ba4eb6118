import { waitFor } from "../wait.js";
import type { CursorClient, RunTurnOptions, RunTurnResult } from "./client.js";

/** A turn that is streaming: its result when it ends, and whether it has ended so far. */
export interface StreamingTurn {
  result: Promise<RunTurnResult>;
  ended(): boolean;
}

/**
 * Starts a turn and resolves once it streams (its first message arrived): e.g. a run holding a
 * worker's only slot while a test checks what happens to the next ones.
 */
export async function streamingTurn(client: CursorClient, opts: RunTurnOptions, timeoutMs = 30_000): Promise<StreamingTurn> {
  let streaming = false;
  let ended = false;
  const result = client.runTurn({
    ...opts,
    onMessage: async (m, turn) => {
      streaming = true;
      await opts.onMessage?.(m, turn);
    },
  });
  void result.then(() => (ended = true), () => (ended = true));
  await waitFor(() => streaming || ended, timeoutMs, `turn ${opts.requestId} streaming`);
  return { result, ended: () => ended };
}
