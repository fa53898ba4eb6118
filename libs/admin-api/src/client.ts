/** A thin typed fetch client of the admin API (used by the CLI and tests). */

export interface AdminClient {
  /** JSON request; rejects with the server's `error` message on a non-2xx status. */
  call(method: string, path: string, body?: unknown): Promise<unknown>;
  /** Raw text (CSV usage). */
  text(path: string): Promise<string>;
}

export function createAdminClient(baseUrl: string, adminKey: string): AdminClient {
  const base = baseUrl.replace(/\/+$/, "");
  const request = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) {
      const payload: unknown = await res.json().catch(() => ({}));
      const message = typeof payload === "object" && payload !== null && "error" in payload ? String(payload.error) : res.statusText;
      throw new Error(`${method} ${path}: ${res.status} ${message}`);
    }
    return res;
  };
  return {
    call: async (method, path, body) => (await request(method, path, body)).json(),
    text: async (path) => (await request("GET", path)).text(),
  };
}
