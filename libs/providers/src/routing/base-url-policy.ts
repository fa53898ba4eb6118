import { BlockList, isIP } from "node:net";

/**
 * What client-sent base URLs may point at. Routes written by the operator are trusted and
 * not checked; only URLs that arrive in a client's BYOK credentials are.
 */
export interface BaseUrlPolicy {
  /** Allow loopback, private, link-local and other internal addresses (embedded mode sets this). */
  allowPrivateBaseUrls: boolean;
  /**
   * When non-empty, the host must match one entry: an exact host (`api.example.com`) or a
   * suffix wildcard (`*.openai.azure.com`, which does not match the bare suffix).
   */
  allowList?: readonly string[];
  /** Refuse plain `http:` for non-private hosts (keys would cross the network in clear). Default false. */
  requireHttps?: boolean;
}

export type BaseUrlVerdict = { ok: true; url: URL } | { ok: false; reason: string };

/**
 * Address ranges a client must not make the gateway reach (RFC 6890 special-purpose
 * blocks): this network, private, CGNAT, loopback, link-local (incl. cloud metadata at
 * 169.254.169.254), IETF protocol assignments, benchmarking, multicast, reserved; IPv6
 * unspecified, loopback, unique-local, link-local, multicast; IPv4-mapped and NAT64 forms
 * are unwrapped and checked as IPv4.
 */
const INTERNAL = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  INTERNAL.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  INTERNAL.addSubnet(net, prefix, "ipv6");
}

/** Host names that only ever resolve to internal machines. */
const INTERNAL_NAMES = /(^|\.)(localhost|localdomain|local|internal|intranet|lan|home\.arpa)$/i;

/**
 * True when `ip` (a literal IPv4/IPv6 address) is loopback, private, link-local or otherwise
 * internal. Also the connect-time check (shared/address-guard.ts) after DNS resolution, the
 * only complete defence against names that resolve to internal addresses.
 */
export function isInternalAddress(ip: string): boolean {
  const bare = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip;
  const family = isIP(bare);
  if (family === 4) return INTERNAL.check(bare, "ipv4");
  if (family !== 6) return false;
  const lower = bare.toLowerCase();
  const mapped = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/.exec(lower);
  if (mapped) {
    const v4 = mapped[1] ?? hexPairToV4(mapped[2] as string, mapped[3] as string);
    return INTERNAL.check(v4, "ipv4");
  }
  return INTERNAL.check(bare, "ipv6");
}

function hexPairToV4(hi: string, lo: string): string {
  const a = parseInt(hi, 16);
  const b = parseInt(lo, 16);
  return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
}

function hostMatches(host: string, entry: string): boolean {
  const e = entry.trim().toLowerCase();
  if (e.startsWith("*.")) return host.endsWith(e.slice(1)) && host.length > e.length - 1;
  return host === e;
}

/**
 * Checks a client-sent base URL. Literal addresses are checked against the internal
 * ranges; names against internal-only suffixes. The WHATWG URL parser already normalizes
 * numeric IPv4 spellings (`http://2130706433/`, `http://0x7f.1/`) to dotted form, so they
 * cannot slip past. Names that *resolve* to internal addresses are caught by the connect-time
 * check (shared/address-guard.ts) — this pure function does no DNS.
 */
export function checkBaseUrl(raw: string, policy: BaseUrlPolicy): BaseUrlVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "the base URL is not a valid URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { ok: false, reason: `the base URL scheme ${url.protocol} is not allowed (use https)` };
  }
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  if (!host) return { ok: false, reason: "the base URL has no host" };
  const allow = policy.allowList?.filter((e) => e.trim() !== "") ?? [];
  if (allow.length > 0 && !allow.some((e) => hostMatches(host, e))) {
    return { ok: false, reason: `the host ${host} is not on the gateway's allow-list for base URLs` };
  }
  const internal = isIP(host.replace(/^\[|\]$/g, "")) ? isInternalAddress(host) : INTERNAL_NAMES.test(host);
  if (internal && !policy.allowPrivateBaseUrls) {
    return { ok: false, reason: `the host ${host} is a loopback, private or link-local address, which this gateway does not call` };
  }
  if (policy.requireHttps && url.protocol === "http:" && !internal) {
    return { ok: false, reason: "the base URL must use https" };
  }
  return { ok: true, url };
}
