// SSRF by name: a client-sent base URL whose host resolves (or redirects) to an internal address
// is refused at connect time, before the socket connects. No network: an injected resolver maps
// public-looking names to local addresses; 127.0.0.2 stands in for "the public internet" where a
// test needs a first hop that is allowed.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@byok/testing";
import type { ProviderTarget } from "@byok/protocol";
import { makeRequest, runPass, textOf } from "../test-support/helpers.js";
import { createAnthropicAdapter } from "../anthropic/adapter.js";
import { createOpenAIChatAdapter } from "../openai-chat/adapter.js";
import { isInternalAddress } from "../routing/base-url-policy.js";
import { createAddressGuardedFetch, type Resolve } from "./address-guard.js";

const PUBLIC_STAND_IN = "127.0.0.2";
const names: Record<string, string> = {
  "api.public-llm.example": "127.0.0.1",
  "redirector.example": PUBLIC_STAND_IN,
  "metadata.example": "169.254.169.254",
  "mixed.example": "8.8.8.8,10.0.0.5",
};
const lookups: string[] = [];
const resolve: Resolve = async (host) => {
  lookups.push(host);
  const a = names[host];
  if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
  return a.split(",").map((address) => ({ address, family: 4 }));
};
/** The real policy, except for the one address the tests use as a public host. */
const refuses = (address: string) => address !== PUBLIC_STAND_IN && isInternalAddress(address);

let sim: Simulator;
let redirector: Server;
let redirectorPort: number;
let redirectTo = "";
let redirects = 0;

beforeAll(async () => {
  sim = await startSimulator();
  redirector = createServer((req, res) => {
    redirects++;
    req.resume();
    res.writeHead(307, { location: redirectTo }).end();
  });
  await new Promise<void>((r) => redirector.listen(0, PUBLIC_STAND_IN, () => r()));
  redirectorPort = (redirector.address() as AddressInfo).port;
});
afterAll(async () => {
  await sim.close();
  await new Promise((r) => redirector.close(r));
});

const simPort = () => new URL(sim.url).port;
const target = (baseUrl: string, kind: ProviderTarget["kind"] = "openai-chat"): ProviderTarget => ({
  kind,
  model: "m",
  baseUrl,
  apiKey: "sk-client-0123456789",
  credentialsSource: "client",
  clientSentUrl: true,
});
const guarded = createOpenAIChatAdapter({ clientUrlFetch: createAddressGuardedFetch({ resolve, refuses }) });

describe("connect-time address check for client-sent base URLs", () => {
  it("refuses a public-looking name that resolves to loopback before connecting", async () => {
    const before = sim.requests.length;
    const { error } = await runPass(guarded, makeRequest(target(`http://api.public-llm.example:${simPort()}/v1`)));
    expect(error?.kind).toBe("address_refused");
    expect(error?.retryable).toBe(false);
    expect(error?.message).toMatch(/api\.public-llm\.example resolves to 127\.0\.0\.1, a loopback, private or link-local address/);
    expect(lookups).toContain("api.public-llm.example");
    expect(sim.requests.length).toBe(before);
  });

  it("reaches the same name when the address is allowed (the resolver really points at the simulator)", async () => {
    const open = createOpenAIChatAdapter({ clientUrlFetch: createAddressGuardedFetch({ resolve, refuses: () => false }) });
    sim.enqueue({ text: "reached" });
    const { events, error } = await runPass(open, makeRequest(target(`http://api.public-llm.example:${simPort()}/v1`)));
    expect(error).toBeUndefined();
    expect(textOf(events, "text_delta")).toBe("reached");
  });

  it("refuses a redirect to an internal literal address and to a name resolving to cloud metadata", async () => {
    for (const to of [`http://127.0.0.1:${simPort()}/v1/chat/completions`, `http://metadata.example:${simPort()}/latest/meta-data`]) {
      redirectTo = to;
      const before = { sim: sim.requests.length, redirects };
      const { error } = await runPass(guarded, makeRequest(target(`http://redirector.example:${redirectorPort}/v1`)));
      expect(redirects).toBe(before.redirects + 1);
      expect(error?.kind).toBe("address_refused");
      expect(error?.message).toMatch(/127\.0\.0\.1|169\.254\.169\.254/);
      expect(sim.requests.length).toBe(before.sim);
    }
  });

  it("refuses a name with any internal address among public ones, and a literal internal address", async () => {
    const mixed = await runPass(guarded, makeRequest(target("https://mixed.example/v1")));
    expect(mixed.error?.message).toMatch(/resolves to 10\.0\.0\.5/);
    const literal = await runPass(guarded, makeRequest(target(`http://127.0.0.1:${simPort()}/v1`)));
    expect(literal.error?.kind).toBe("address_refused");
  });

  it("guards every SDK the same way (Anthropic Messages)", async () => {
    const anthropic = createAnthropicAdapter({ clientUrlFetch: createAddressGuardedFetch({ resolve, refuses }) });
    const before = sim.requests.length;
    const { error } = await runPass(anthropic, makeRequest(target(`http://api.public-llm.example:${simPort()}`, "anthropic")));
    expect(error?.kind).toBe("address_refused");
    expect(sim.requests.length).toBe(before);
  });

  it("leaves operator routes (not client-sent) on the ordinary fetch", async () => {
    sim.enqueue({ text: "operator route" });
    const { events, error } = await runPass(guarded, makeRequest({ ...target(`${sim.url}/v1`), clientSentUrl: false, credentialsSource: "gateway" }));
    expect(error).toBeUndefined();
    expect(textOf(events, "text_delta")).toBe("operator route");
  });
});
