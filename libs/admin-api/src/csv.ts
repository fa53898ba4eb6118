/** RFC 4180 CSV: header row from `columns`, fields quoted when they need it. */
export function toCsv<T extends object>(rows: readonly T[], columns: readonly (keyof T & string)[]): string {
  const field = (v: unknown) => {
    const s = v === undefined || v === null ? "" : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [columns.join(","), ...rows.map((r) => columns.map((c) => field(r[c])).join(","))].join("\r\n") + "\r\n";
}
