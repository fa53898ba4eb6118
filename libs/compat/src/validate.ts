import type { z } from "zod";
import { CompatError } from "./errors.js";

export function invalid(message: string, param?: string): CompatError {
  return new CompatError("invalid_request", message, param === undefined ? {} : { param });
}

/** Validates a request body; the error names the first failing field (never echoes values). */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = issue?.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "") ?? "";
  throw invalid(`${path || "body"}: ${issue?.message ?? "invalid"}`, path || undefined);
}
