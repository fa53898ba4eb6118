/**
 * Bounds a graceful stop. Closing a connection to a Redis or PostgreSQL that no longer answers
 * waits for ever (ioredis queues the QUIT until it reconnects; BullMQ's worker waits on its
 * blocking connection), so a process told to stop during an outage would hang until the
 * orchestrator's SIGKILL, or for good outside one. Armed when the stop begins: after `afterMs` the
 * process reports it and exits 1 (docs/operations.md "Helm", "Stopping").
 */
export function exitIfStopStalls(afterMs: number, report: (message: string) => void): void {
  const timer = setTimeout(() => {
    report(`the graceful stop did not finish within ${afterMs} ms (is Redis or PostgreSQL unreachable?); exiting`);
    process.exit(1);
  }, afterMs);
  timer.unref();
}
