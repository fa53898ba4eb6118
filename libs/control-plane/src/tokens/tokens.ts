/**
 * The gateway's own session tokens (docs/control-plane.md "Tokens"): HS256 JWTs signed with
 * the configured key ring. The first key signs; every key of the ring verifies, so a rotated-out
 * key keeps verifying its tokens while it stays listed. A token names its tenant, user and
 * gateway API key; the client reads only `sub` and `exp`.
 */
import { randomUUID } from "node:crypto";
import { errors, jwtVerify, SignJWT, type JWTPayload } from "jose";
import type { TokenSigningKey } from "@byok/config";

export type TokenKind = "access" | "refresh";

/** Who a token was issued to: the principal of the exchange that minted it. */
export interface TokenSubject {
  tenantId: string;
  userId: string | undefined;
  /** The gateway API key exchanged (absent for open and trusted-header principals). */
  keyId: string | undefined;
}

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  /** Stable per tenant and user (or key): what Cursor stores as the signed-in account. */
  authId: string;
  /** Seconds the access token lives. */
  expiresIn: number;
}

export type TokenCheck =
  | { ok: true; subject: TokenSubject; kind: TokenKind; expiresAt: Date }
  | { ok: false; reason: "expired" | "invalid" | "wrong_kind" };

export interface TokenService {
  issue(subject: TokenSubject): Promise<IssuedTokens>;
  /** Verifies signature, issuer, audience, expiry and kind. Never throws for a bad token. */
  verify(token: string, kind: TokenKind): Promise<TokenCheck>;
}

export interface TokenServiceOptions {
  keys: readonly TokenSigningKey[];
  issuer: string;
  accessTtlS: number;
  refreshTtlS: number;
  now?: () => Date;
}

/** Claim names, kept short like registered claims. */
const CLAIM = { tenant: "tid", user: "uid", key: "akid", kind: "typ" } as const;

export function createTokenService(opts: TokenServiceOptions): TokenService {
  const signing = opts.keys[0];
  if (signing === undefined) throw new Error("the token key ring is empty");
  const byKid = new Map(opts.keys.map((k) => [k.kid, k.secret]));
  const now = opts.now ?? (() => new Date());

  const sign = (subject: TokenSubject, kind: TokenKind, ttlS: number, iat: number) =>
    new SignJWT({
      [CLAIM.tenant]: subject.tenantId,
      ...(subject.userId !== undefined ? { [CLAIM.user]: subject.userId } : {}),
      ...(subject.keyId !== undefined ? { [CLAIM.key]: subject.keyId } : {}),
      [CLAIM.kind]: kind,
    })
      .setProtectedHeader({ alg: "HS256", kid: signing.kid, typ: "JWT" })
      .setIssuer(opts.issuer)
      .setAudience(opts.issuer)
      .setSubject(subjectOf(subject))
      .setJti(randomUUID())
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlS)
      .sign(signing.secret);

  return {
    async issue(subject) {
      const iat = Math.floor(now().getTime() / 1000);
      const [accessToken, refreshToken] = await Promise.all([
        sign(subject, "access", opts.accessTtlS, iat),
        sign(subject, "refresh", opts.refreshTtlS, iat),
      ]);
      return { accessToken, refreshToken, authId: `byok|${subjectOf(subject)}`, expiresIn: opts.accessTtlS };
    },

    async verify(token, kind) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(
          token,
          (header) => {
            const secret = header.kid === undefined ? undefined : byKid.get(header.kid);
            if (secret === undefined) throw new errors.JWSSignatureVerificationFailed("unknown key id");
            return secret;
          },
          { issuer: opts.issuer, audience: opts.issuer, algorithms: ["HS256"], currentDate: now() },
        ));
      } catch (err) {
        return { ok: false, reason: err instanceof errors.JWTExpired ? "expired" : "invalid" };
      }
      const tenantId = payload[CLAIM.tenant];
      const userId = payload[CLAIM.user];
      const keyId = payload[CLAIM.key];
      if (typeof tenantId !== "string" || tenantId === "") return { ok: false, reason: "invalid" };
      if (userId !== undefined && typeof userId !== "string") return { ok: false, reason: "invalid" };
      if (keyId !== undefined && typeof keyId !== "string") return { ok: false, reason: "invalid" };
      if (payload[CLAIM.kind] !== kind) return { ok: false, reason: "wrong_kind" };
      return { ok: true, kind, subject: { tenantId, userId, keyId }, expiresAt: new Date((payload.exp ?? 0) * 1000) };
    },
  };
}

/** `sub`: the user when there is one, else the key, else the tenant. */
function subjectOf(s: TokenSubject): string {
  if (s.userId !== undefined) return `${s.tenantId}/user/${s.userId}`;
  if (s.keyId !== undefined) return `${s.tenantId}/key/${s.keyId}`;
  return `${s.tenantId}/tenant`;
}

/** Three base64url segments whose header starts `{"`: a JWT, never a `byok_` gateway key. */
export function looksLikeJwt(s: string): boolean {
  return /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(s);
}
