import type { ConnectCodeName } from "@byok/wire";

/** A Connect unary error as answered by BidiAppend (or an HTTP-level RunSSE refusal). */
export interface ConnectErrorBody {
  status: number;
  code: ConnectCodeName;
  message: string;
}

/** Connect's HTTP status → code mapping, for error bodies that are not Connect JSON. */
function codeFromStatus(status: number): ConnectCodeName {
  switch (status) {
    case 400: return "internal";
    case 401: return "unauthenticated";
    case 403: return "permission_denied";
    case 404: return "unimplemented";
    case 408: return "deadline_exceeded";
    case 413: return "resource_exhausted";
    case 429: case 502: case 503: case 504: return "unavailable";
    default: return "unknown";
  }
}

/** Parses a Connect unary error body (`{"code","message"}`); falls back to the HTTP status mapping. Pure. */
export function parseConnectError(status: number, body: string): ConnectErrorBody {
  try {
    const json = JSON.parse(body) as { code?: unknown; message?: unknown };
    if (json && typeof json.code === "string") {
      return { status, code: json.code as ConnectCodeName, message: typeof json.message === "string" ? json.message : "" };
    }
  } catch {
    // not JSON: fall through
  }
  return { status, code: codeFromStatus(status), message: body };
}
