/**
 * The server notices a run shows the user: text deltas with `is_server_notice`, inside the
 * assistant's message, telling why output restarts or pauses (docs/architecture.md "Server notices").
 * Each stands on its own lines so it never glues to the model's text.
 */
export const NOTICE = {
  /** A provider attempt failed after its output reached the client; the call is retried. */
  reconnecting: (retryNumber: number, maxRetries: number) => `\n\n[connection to the model was interrupted; reconnecting ${retryNumber}/${maxRetries} …]\n\n`,
  /** The provider refused the pass as too long: earlier messages are summarized first. */
  compacting: "\n\n[the conversation is longer than the model's context window; summarizing earlier messages and retrying …]\n\n",
  /** Another worker took the run over and re-runs the cut pass. */
  takenOver: "\n\n[the gateway moved this run to another worker; continuing from the last saved point …]\n\n",
} as const;
