import type { Socket } from "node:net";

/**
 * Counts a socket's writes from now on: each `_write` or `_writev` (the stream-implementer
 * methods every write goes through) is one write to the kernel; `chunks` counts what they
 * carried. For tests of write coalescing (libs/redis `coalesceWrites`).
 */
export function countSocketWrites(socket: Socket): { writes: number; chunks: number } {
  const seen = { writes: 0, chunks: 0 };
  const s = socket as Socket & { _write: (...a: unknown[]) => void; _writev?: (chunks: unknown[], cb: unknown) => void };
  const write = s._write.bind(s);
  s._write = (...a: unknown[]) => {
    seen.writes++;
    seen.chunks++;
    write(...a);
  };
  const writev = s._writev?.bind(s);
  if (writev) {
    s._writev = (chunks: unknown[], cb: unknown) => {
      seen.writes++;
      seen.chunks += chunks.length;
      writev(chunks, cb);
    };
  }
  return seen;
}
