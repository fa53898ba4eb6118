import type { WebSearchBackend } from "./ports.js";

/**
 * A web search backend over HTTP: `GET <url>?q=<query>` answering
 * `{"results":[{"title","url","snippet"}]}` (the shape of common self-hosted search APIs
 * behind a thin adapter). Off unless GATEWAY_WEB_SEARCH_URL is set.
 */
export function createHttpSearchBackend(opts: { url: string; maxResults?: number; headers?: Record<string, string> }): WebSearchBackend {
  const max = opts.maxResults ?? 8;
  return {
    async search(query, signal) {
      const u = new URL(opts.url);
      u.searchParams.set("q", query);
      const res = await fetch(u, { signal, ...(opts.headers ? { headers: opts.headers } : {}) });
      if (!res.ok) throw new Error(`search backend answered HTTP ${res.status}`);
      const body = (await res.json()) as { results?: { title?: unknown; url?: unknown; snippet?: unknown }[] };
      return (body.results ?? []).slice(0, max).map((r) => ({
        title: String(r.title ?? ""),
        url: String(r.url ?? ""),
        snippet: String(r.snippet ?? ""),
      }));
    },
  };
}
