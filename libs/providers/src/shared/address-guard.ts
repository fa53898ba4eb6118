import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";
import { isInternalAddress } from "../routing/base-url-policy.js";

/** Resolves a host name to every address it has (the platform resolver by default). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

export interface AddressGuardOptions {
  /** Injected resolver (tests); default: the OS resolver, as every other connection uses. */
  resolve?: Resolve;
  /** Which resolved addresses are refused; default loopback, private, link-local and the other internal ranges. */
  refuses?: (address: string) => boolean;
}

/** The error a refused connection fails with; the adapters turn it into a non-retryable refusal. */
export class AddressRefusedError extends Error {
  readonly code = "ERR_GATEWAY_ADDRESS_REFUSED";
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(
      host === address
        ? `the host ${host} is a loopback, private or link-local address, which this gateway does not call`
        : `the host ${host} resolves to ${address}, a loopback, private or link-local address, which this gateway does not call`,
    );
    this.name = "AddressRefusedError";
  }
}

/** The AddressRefusedError along an error's cause chain (SDKs wrap fetch failures), if any. */
export function addressRefusal(err: unknown): AddressRefusedError | undefined {
  let cur: unknown = err;
  for (let depth = 0; depth < 8 && cur; depth++) {
    if (cur instanceof AddressRefusedError) return cur;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

const osResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, order: "verbatim" }, (err, addrs) => (err ? reject(err) : resolve(addrs))));

/**
 * A fetch for URLs a client sent: every connection it opens — the first request, each redirect
 * hop and each retry — checks the address it is about to connect to, after DNS resolution and
 * before the socket connects, so a public-looking name that resolves (or rebinds) to loopback,
 * private or link-local space is never reached. A name with any internal address is refused
 * outright; the address connected to is one of the checked ones (no second lookup to race).
 */
export function createAddressGuardedFetch(opts: AddressGuardOptions = {}): typeof fetch {
  const resolve = opts.resolve ?? osResolve;
  const refuses = opts.refuses ?? isInternalAddress;
  const lookup = (hostname: string, options: { all?: boolean; family?: number | string }, callback: (...args: unknown[]) => void) => {
    resolve(hostname).then(
      (all) => {
        const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : Number(options.family ?? 0);
        const addrs = family ? all.filter((a) => a.family === family) : all;
        const bad = all.find((a) => refuses(a.address));
        if (bad) return callback(new AddressRefusedError(hostname, bad.address));
        if (addrs.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }));
        if (options.all) return callback(null, addrs);
        return callback(null, addrs[0]!.address, addrs[0]!.family);
      },
      (err: unknown) => callback(err),
    );
  };
  const connectByName = buildConnector({ lookup } as buildConnector.BuildOptions);
  const dispatcher = new Agent({
    connect(options, callback) {
      // A literal address never reaches `lookup` (net.connect skips DNS for it): check it here.
      const host = options.hostname.replace(/^\[|\]$/g, "");
      if (isIP(host) && refuses(host)) {
        callback(new AddressRefusedError(host, host), null);
        return;
      }
      connectByName(options, callback);
    },
  });
  const guarded = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher });
  return guarded as unknown as typeof fetch;
}
