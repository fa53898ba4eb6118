import { z } from "zod";

/** Values of the `thinking_effort` model parameter a route can offer (docs/control-plane.md). */
export const THINKING_EFFORTS = ["disabled", "low", "medium", "high", "xhigh", "max"] as const;

/**
 * What a route tells Cursor's model picker (README "Model catalogue"). Never a key or a base
 * URL: those stay in the route's targets.
 */
export const RouteCatalogueSchema = z
  .object({
    /** Shown in the picker (default: the model id). */
    displayName: z.string().min(1).max(200).optional(),
    /** Other ids the client may send for this model; routing resolves them to the route. */
    aliases: z.array(z.string().min(1).max(200)).max(32).default([]),
    /** The model thinks (reasoning output); the picker shows its thinking toggle. */
    thinking: z.boolean().default(false),
    /** Offered in Cursor's max mode. */
    maxMode: z.boolean().default(false),
    /** Thinking-effort variants offered in the picker (`thinking_effort` parameter values). */
    efforts: z.array(z.enum(THINKING_EFFORTS)).max(8).default([]),
    /** The effort selected by default; must be one of `efforts`. */
    defaultEffort: z.enum(THINKING_EFFORTS).optional(),
    /** Context window shown to the client (tokens). */
    contextTokens: z.number().int().positive().optional(),
    /** Routed but not listed in the picker. */
    hidden: z.boolean().default(false),
  })
  .strict()
  .refine((c) => c.defaultEffort === undefined || c.efforts.includes(c.defaultEffort), {
    message: "defaultEffort must be one of efforts",
    path: ["defaultEffort"],
  });

export type RouteCatalogue = z.infer<typeof RouteCatalogueSchema>;

/** A tenant's control-plane policy as stored on its row (admin `tenant set-policy`). */
export const TenantPolicySchema = z
  .object({
    /** The model new chats start with; must be one of the tenant's routes. */
    defaultModel: z.string().min(1).max(200).optional(),
    /** `enforced`: every request of the tenant is treated as `x-ghost-mode: true`. */
    privacyMode: z.enum(["user", "enforced"]).default("user"),
  })
  .strict();

export type TenantPolicy = z.infer<typeof TenantPolicySchema>;

/** One token-signing key: `kid` names it in every token it signs. */
export interface TokenSigningKey {
  kid: string;
  /** HMAC-SHA256 secret (≥ 32 bytes). Secret. */
  secret: Uint8Array;
}

/** The control plane of one process (issue 11): tokens, transports, catalogue defaults. */
export interface ControlPlaneConfig {
  /**
   * GATEWAY_TOKEN_KEYS: the first key signs, every key verifies (rotation: keep the old key
   * listed until its tokens expired). Undefined: embedded mode generates one into its data
   * dir; distributed mode's exchange answers that token keys are not configured.
   */
  tokenKeys: TokenSigningKey[] | undefined;
  /** GATEWAY_ACCESS_TOKEN_TTL_S (default 3600). */
  accessTokenTtlS: number;
  /** GATEWAY_REFRESH_TOKEN_TTL_S (default 7 days). */
  refreshTokenTtlS: number;
  /** GATEWAY_TOKEN_KEY_RECHECK_MS: a token's API key status is re-read at most this long after the last read (revocation delay). */
  tokenKeyRecheckMs: number;
  /** GATEWAY_TOKEN_ISSUER: `iss` and `aud` of every token. */
  tokenIssuer: string;
  /** GATEWAY_AGENT_TRANSPORT: what GetServerConfig tells clients (`http2` Run, `http1` RunSSE + BidiAppend, `client` = client's choice). */
  agentTransport: "http2" | "http1" | "client";
  /** GATEWAY_AGENT_URL: agent traffic is served at this base URL (agent_url_config). */
  agentUrl: string | undefined;
  /** GATEWAY_DEFAULT_MODEL: default model of tenants without their own. */
  defaultModel: string | undefined;
  /** GATEWAY_TLS_CERT_FILE + GATEWAY_TLS_KEY_FILE: serve h2 + HTTP/1.1 over TLS (ALPN). */
  tls: { certFile: string; keyFile: string } | undefined;
  /** GATEWAY_TRACES_FORWARD_URL: client `/v1/traces` bodies are forwarded to this OTLP/HTTP endpoint; unset = accepted and dropped. */
  tracesForwardUrl: string | undefined;
}

const tokenKeys = z
  .string()
  .transform((s, ctx) => {
    const out: TokenSigningKey[] = [];
    for (const part of s.split(",").map((p) => p.trim()).filter(Boolean)) {
      const i = part.indexOf(":");
      const kid = i > 0 ? part.slice(0, i) : "";
      const raw = i > 0 ? part.slice(i + 1) : "";
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(kid)) {
        ctx.addIssue({ code: "custom", message: "each key is <kid>:<base64 secret>, kid of letters, digits, . _ -" });
        return z.NEVER;
      }
      const secret = Buffer.from(raw, "base64");
      if (secret.length < 32) {
        ctx.addIssue({ code: "custom", message: `key ${kid}: the secret must be base64 of at least 32 bytes` });
        return z.NEVER;
      }
      if (out.some((k) => k.kid === kid)) {
        ctx.addIssue({ code: "custom", message: `key ${kid} is listed twice` });
        return z.NEVER;
      }
      out.push({ kid, secret: new Uint8Array(secret) });
    }
    if (out.length === 0) {
      ctx.addIssue({ code: "custom", message: "at least one key" });
      return z.NEVER;
    }
    return out;
  });

export const ControlPlaneEnvSchema = z.object({
  GATEWAY_TOKEN_KEYS: tokenKeys.optional(),
  GATEWAY_ACCESS_TOKEN_TTL_S: z.coerce.number().int().min(60).max(86_400).default(3_600),
  GATEWAY_REFRESH_TOKEN_TTL_S: z.coerce.number().int().min(300).max(90 * 86_400).default(7 * 86_400),
  GATEWAY_TOKEN_KEY_RECHECK_MS: z.coerce.number().int().min(0).max(300_000).default(5_000),
  GATEWAY_TOKEN_ISSUER: z.string().min(1).max(200).default("cursor-byok-gateway"),
  GATEWAY_AGENT_TRANSPORT: z.enum(["http2", "http1", "client"]).default("http1"),
  GATEWAY_AGENT_URL: z.string().url().optional(),
  GATEWAY_DEFAULT_MODEL: z.string().min(1).max(200).optional(),
  GATEWAY_TLS_CERT_FILE: z.string().min(1).optional(),
  GATEWAY_TLS_KEY_FILE: z.string().min(1).optional(),
  GATEWAY_TRACES_FORWARD_URL: z.string().url().optional(),
});

/** Builds the control-plane section from the parsed environment; throws a message naming the field. */
export function controlPlaneOf(e: z.infer<typeof ControlPlaneEnvSchema>): ControlPlaneConfig {
  if ((e.GATEWAY_TLS_CERT_FILE === undefined) !== (e.GATEWAY_TLS_KEY_FILE === undefined)) {
    throw new Error("GATEWAY_TLS_CERT_FILE and GATEWAY_TLS_KEY_FILE go together");
  }
  return {
    tokenKeys: e.GATEWAY_TOKEN_KEYS,
    accessTokenTtlS: e.GATEWAY_ACCESS_TOKEN_TTL_S,
    refreshTokenTtlS: e.GATEWAY_REFRESH_TOKEN_TTL_S,
    tokenKeyRecheckMs: e.GATEWAY_TOKEN_KEY_RECHECK_MS,
    tokenIssuer: e.GATEWAY_TOKEN_ISSUER,
    agentTransport: e.GATEWAY_AGENT_TRANSPORT,
    agentUrl: e.GATEWAY_AGENT_URL,
    defaultModel: e.GATEWAY_DEFAULT_MODEL,
    tls: e.GATEWAY_TLS_CERT_FILE && e.GATEWAY_TLS_KEY_FILE ? { certFile: e.GATEWAY_TLS_CERT_FILE, keyFile: e.GATEWAY_TLS_KEY_FILE } : undefined,
    tracesForwardUrl: e.GATEWAY_TRACES_FORWARD_URL,
  };
}
