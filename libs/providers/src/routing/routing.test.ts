import { describe, expect, it } from "vitest";
import { checkBaseUrl, isInternalAddress, mapThinkingEffort, resolveRoute, DEFAULT_AZURE_API_VERSION, type RoutingConfig, type Route } from "../routing.js";

const open: RoutingConfig = { routes: [], baseUrlPolicy: { allowPrivateBaseUrls: false } };
const key = { kind: "api_key" as const, apiKey: "sk-client-123456" };

function targetsOf(r: ReturnType<typeof resolveRoute>) {
  if (!r.ok) throw new Error(`refused: ${r.refusal.kind} ${r.refusal.message}`);
  return r.targets;
}

describe("resolveRoute without a configured route", () => {
  it("routes api-key models by id and base URL", () => {
    expect(targetsOf(resolveRoute({ modelId: "claude-sonnet-4-5", credentials: key }, open))[0]).toMatchObject({ kind: "anthropic", model: "claude-sonnet-4-5", apiKey: key.apiKey, credentialsSource: "client" });
    expect(targetsOf(resolveRoute({ modelId: "gpt-5", credentials: key }, open))[0]).toMatchObject({ kind: "openai-responses", model: "gpt-5" });
    expect(targetsOf(resolveRoute({ modelId: "o3-mini", credentials: key }, open))[0]?.kind).toBe("openai-responses");
    expect(targetsOf(resolveRoute({ modelId: "gpt-5", credentials: { ...key, baseUrl: "https://api.openai.com/v1" } }, open))[0]?.kind).toBe("openai-responses");
    expect(targetsOf(resolveRoute({ modelId: "gpt-5", credentials: { ...key, baseUrl: "https://openrouter.ai/api/v1" } }, open))[0]).toMatchObject({ kind: "openai-chat", baseUrl: "https://openrouter.ai/api/v1" });
    expect(targetsOf(resolveRoute({ modelId: "deepseek-chat", credentials: { ...key, baseUrl: "https://api.deepseek.com" } }, open))[0]?.kind).toBe("openai-chat");
    expect(targetsOf(resolveRoute({ modelId: "omni-thing", credentials: key }, open))[0]?.kind).toBe("openai-chat");
  });

  it("routes Azure and Bedrock credentials to their providers", () => {
    const az = targetsOf(resolveRoute({ modelId: "gpt-4o", credentials: { kind: "azure", apiKey: "az-key-1234", baseUrl: "https://acme.openai.azure.com", deployment: "gpt4o-prod" } }, open))[0];
    expect(az).toMatchObject({ kind: "azure-openai", model: "gpt4o-prod", apiKey: "az-key-1234", azure: { endpoint: "https://acme.openai.azure.com", deployment: "gpt4o-prod", apiVersion: DEFAULT_AZURE_API_VERSION } });
    const br = targetsOf(resolveRoute({ modelId: "anthropic.claude-sonnet-4", credentials: { kind: "bedrock", accessKey: "AKIAEXAMPLE", secretKey: "s3cr3t", region: "us-east-1", sessionToken: "tok" } }, open))[0];
    expect(br).toMatchObject({ kind: "bedrock-anthropic", model: "anthropic.claude-sonnet-4", bedrock: { region: "us-east-1", accessKeyId: "AKIAEXAMPLE", secretAccessKey: "s3cr3t", sessionToken: "tok" } });
    // Both URLs come from the client: every connection is address-checked (libs/providers/src/shared/address-guard.ts).
    expect(az?.clientSentUrl).toBe(true);
    expect(br?.clientSentUrl).toBe(true);
    expect(targetsOf(resolveRoute({ modelId: "llama", credentials: { ...key, baseUrl: "https://llm.example.com/v1" } }, open))[0]?.clientSentUrl).toBe(true);
  });

  it("refuses without route and credentials", () => {
    const r = resolveRoute({ modelId: "mystery" }, open);
    expect(r).toMatchObject({ ok: false, refusal: { kind: "no_route" } });
  });

  it("applies the base-URL policy to client base URLs", () => {
    for (const url of ["http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://10.1.2.3/v1", "http://169.254.169.254/latest", "http://[::1]:8080", "http://2130706433/", "http://[::ffff:7f00:1]/", "http://metadata.google.internal/"]) {
      const r = resolveRoute({ modelId: "llama", credentials: { ...key, baseUrl: url } }, open);
      expect(r, url).toMatchObject({ ok: false, refusal: { kind: "base_url_refused" } });
      if (!r.ok) expect(r.refusal.message).not.toContain(key.apiKey);
    }
    const embedded = { ...open, baseUrlPolicy: { allowPrivateBaseUrls: true } };
    expect(targetsOf(resolveRoute({ modelId: "llama", credentials: { ...key, baseUrl: "http://127.0.0.1:11434/v1" } }, embedded))[0]?.baseUrl).toBe("http://127.0.0.1:11434/v1");
    const azureInternal = resolveRoute({ modelId: "m", credentials: { kind: "azure", apiKey: "k", baseUrl: "http://192.168.1.5", deployment: "d" } }, open);
    expect(azureInternal).toMatchObject({ ok: false, refusal: { kind: "base_url_refused" } });
  });

  it("maps thinking effort parameters onto the target", () => {
    const t = targetsOf(resolveRoute({ modelId: "gpt-5", credentials: key, parameters: [{ id: "thinking_effort", value: "high" }] }, open))[0];
    expect(t?.reasoningEffort).toBe("high");
  });
});

describe("resolveRoute with configured routes", () => {
  const routes: Route[] = [
    {
      modelId: "claude-sonnet-4-5",
      targets: [
        { kind: "bedrock-anthropic", model: "us.anthropic.claude-sonnet-4-5-v1:0", credentials: { source: "gateway", ref: "aws-main" }, bedrock: { region: "us-west-2" }, contextWindow: 200_000, maxOutputTokens: 16_000 },
        { kind: "anthropic", model: "claude-sonnet-4-5", credentials: { source: "gateway", ref: "anthropic-main" }, parameters: { effort: { max: "high" }, maxMode: { maxOutputTokens: 64_000, contextWindow: 1_000_000 } } },
      ],
    },
    { modelId: "gpt-*", targets: [{ kind: "openai-chat", model: "gpt-from-prefix", baseUrl: "http://10.0.0.5/v1", credentials: { source: "client" } }] },
    { modelId: "gpt-5*", targets: [{ kind: "openai-responses", model: "gpt-5-pinned", credentials: { source: "client" }, parameters: { passthrough: { temperature: "temperature" }, defaultEffort: "medium" } }] },
    { modelId: "azure-4o", targets: [{ kind: "azure-openai", model: "prod-4o", baseUrl: "https://acme.openai.azure.com", credentials: { source: "gateway", ref: "azure" }, azure: { apiVersion: "2025-04-01-preview" } }] },
    { modelId: "broken", targets: [{ kind: "anthropic", model: "x", credentials: { source: "gateway", ref: "missing" } }] },
  ];
  const config: RoutingConfig = {
    routes,
    baseUrlPolicy: { allowPrivateBaseUrls: false },
    gatewayCredentials: (ref) =>
      ref === "aws-main"
        ? { kind: "aws", accessKeyId: "AKIAGATEWAY", secretAccessKey: "gw-secret" }
        : ref === "anthropic-main" || ref === "azure"
          ? { kind: "api_key", apiKey: `gw-${ref}` }
          : undefined,
  };

  it("wins over client credentials and keeps failover order", () => {
    const r = resolveRoute({ modelId: "claude-sonnet-4-5", credentials: key, parameters: [{ id: "reasoning", value: "max" }] }, config);
    expect(r.ok && r.source).toBe("route");
    const [a, b] = targetsOf(r);
    expect(a).toMatchObject({ kind: "bedrock-anthropic", model: "us.anthropic.claude-sonnet-4-5-v1:0", credentialsSource: "gateway", bedrock: { region: "us-west-2", accessKeyId: "AKIAGATEWAY" }, contextWindow: 200_000, maxOutputTokens: 16_000, reasoningEffort: "max" });
    expect(b).toMatchObject({ kind: "anthropic", apiKey: "gw-anthropic-main", reasoningEffort: "high" });
  });

  it("applies max mode overrides", () => {
    const [, b] = targetsOf(resolveRoute({ modelId: "claude-sonnet-4-5", maxMode: true }, config));
    expect(b).toMatchObject({ maxOutputTokens: 64_000, contextWindow: 1_000_000 });
  });

  it("matches the longest prefix and uses client keys for client-sourced targets; operator base URLs are trusted", () => {
    const [t] = targetsOf(resolveRoute({ modelId: "gpt-5-codex", credentials: key, parameters: [{ id: "temperature", value: "0.3" }] }, config));
    expect(t).toMatchObject({ kind: "openai-responses", model: "gpt-5-pinned", apiKey: key.apiKey, credentialsSource: "client", reasoningEffort: "medium", options: { extraBody: { temperature: 0.3 } } });
    const [p] = targetsOf(resolveRoute({ modelId: "gpt-4.1", credentials: key }, config));
    expect(p).toMatchObject({ kind: "openai-chat", model: "gpt-from-prefix", baseUrl: "http://10.0.0.5/v1" });
    expect(p?.clientSentUrl).toBeUndefined();
  });

  it("refuses a client-sourced target without client credentials, and a missing gateway secret", () => {
    expect(resolveRoute({ modelId: "gpt-4.1" }, config)).toMatchObject({ ok: false, refusal: { kind: "no_credentials" } });
    expect(resolveRoute({ modelId: "broken", credentials: key }, config)).toMatchObject({ ok: false, refusal: { kind: "no_credentials" } });
  });

  it("builds Azure targets from the route", () => {
    const [t] = targetsOf(resolveRoute({ modelId: "azure-4o" }, config));
    expect(t).toMatchObject({ kind: "azure-openai", model: "prod-4o", apiKey: "gw-azure", azure: { endpoint: "https://acme.openai.azure.com", deployment: "prod-4o", apiVersion: "2025-04-01-preview" } });
    expect(t?.baseUrl).toBeUndefined();
  });
});

describe("checkBaseUrl", () => {
  const policy = { allowPrivateBaseUrls: false, allowList: ["api.deepseek.com", "*.openai.azure.com"] };
  it("enforces the allow-list with suffix wildcards", () => {
    expect(checkBaseUrl("https://api.deepseek.com/v1", policy).ok).toBe(true);
    expect(checkBaseUrl("https://acme.openai.azure.com", policy).ok).toBe(true);
    expect(checkBaseUrl("https://openai.azure.com", policy).ok).toBe(false);
    expect(checkBaseUrl("https://evil.example.com", policy).ok).toBe(false);
  });
  it("refuses odd schemes and plain http when https is required", () => {
    expect(checkBaseUrl("file:///etc/passwd", { allowPrivateBaseUrls: true }).ok).toBe(false);
    expect(checkBaseUrl("not a url", { allowPrivateBaseUrls: true }).ok).toBe(false);
    expect(checkBaseUrl("http://api.example.com", { allowPrivateBaseUrls: false, requireHttps: true }).ok).toBe(false);
  });
  it("classifies addresses", () => {
    for (const ip of ["127.0.0.1", "10.0.0.1", "172.31.255.255", "192.168.0.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1", "[::1]"]) {
      expect(isInternalAddress(ip), ip).toBe(true);
    }
    for (const ip of ["8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]) expect(isInternalAddress(ip), ip).toBe(false);
  });
});

describe("mapThinkingEffort", () => {
  it("reads thinking_effort and synonyms, case-insensitively", () => {
    expect(mapThinkingEffort([{ id: "thinking_effort", value: "xhigh" }])).toBe("xhigh");
    expect(mapThinkingEffort([{ id: "reasoning_effort", value: "LOW" }])).toBe("low");
    expect(mapThinkingEffort([{ id: "reasoning", value: "off" }])).toBe("disabled");
    expect(mapThinkingEffort([{ id: "thinking_effort", value: "none" }])).toBe("disabled");
    expect(mapThinkingEffort([{ id: "thinking_effort", value: "max" }])).toBe("max");
    expect(mapThinkingEffort([{ id: "max_mode", value: "true" }])).toBeUndefined();
    expect(mapThinkingEffort([{ id: "thinking_effort", value: "ludicrous" }])).toBeUndefined();
    expect(mapThinkingEffort(undefined)).toBeUndefined();
  });
});
