/** Path-pattern routing: `/v1/tenants/:tenant/keys` style patterns, exact segment counts. */
export type Params = Record<string, string>;

export interface Route<C> {
  method: string;
  /** The pattern as written (`/v1/tenants/:tenant/keys`): a bounded name for metrics. */
  pattern: string;
  segments: string[];
  handle: (ctx: C, params: Params) => Promise<void>;
  /** A usage read key may call it (for its own tenant only, which the handler enforces). */
  tenantReadable: boolean;
}

export function route<C>(method: string, pattern: string, handle: (ctx: C, params: Params) => Promise<void>, opts: { tenantReadable?: boolean } = {}): Route<C> {
  return { method, pattern, segments: pattern.split("/").filter(Boolean), handle, tenantReadable: opts.tenantReadable ?? false };
}

/** The matching route and its decoded params; `methodMismatch` if only the method differs. */
export function match<C>(routes: readonly Route<C>[], method: string, path: string): { route: Route<C>; params: Params } | "not_found" | "method_not_allowed" {
  const parts = path.split("/").filter(Boolean);
  let pathMatched = false;
  for (const r of routes) {
    if (r.segments.length !== parts.length) continue;
    const params: Params = {};
    const ok = r.segments.every((seg, i) => {
      const part = parts[i] ?? "";
      if (seg.startsWith(":")) {
        try {
          params[seg.slice(1)] = decodeURIComponent(part);
        } catch {
          return false;
        }
        return true;
      }
      return seg === part;
    });
    if (!ok) continue;
    pathMatched = true;
    if (r.method === method) return { route: r, params };
  }
  return pathMatched ? "method_not_allowed" : "not_found";
}
