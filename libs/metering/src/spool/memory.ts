import type { HeldLedgerRow, LedgerSpool } from "./types.js";

/** The embedded mode's spool: one process, rows kept in memory (lost if the process exits first). */
export function createMemoryLedgerSpool(opts: { maxRows: number }): LedgerSpool {
  const rows: HeldLedgerRow[] = [];
  let closed = false;
  return {
    async hold(row) {
      if (closed || rows.length >= opts.maxRows) return false;
      rows.push(structuredClone(row));
      return true;
    },
    async peek(max) {
      if (closed) return [];
      return rows.slice(0, max).map((row) => ({
        row: structuredClone(row),
        forget: async () => {
          const i = rows.indexOf(row);
          if (i >= 0) rows.splice(i, 1);
        },
      }));
    },
    async size() {
      return rows.length;
    },
    get closed() {
      return closed;
    },
    async close() {
      closed = true;
    },
  };
}
