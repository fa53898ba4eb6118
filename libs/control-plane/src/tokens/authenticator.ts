/**
 * Accepts the gateway's session tokens wherever a gateway API key is accepted: a Bearer that
 * is a JWT is verified here, anything else goes to the process's own authenticator (API key,
 * trusted header or open). A token bound to an API key works only while that key does: the
 * key's status is re-read at most `recheckMs` after the last read (docs/control-plane.md
 * "Revocation"), so a revoked key's tokens stop working within that time.
 */
import type { ApiKeyRecord } from "@byok/store";
import { tokenRefused } from "../errors.js";
import { looksLikeJwt, type TokenKind, type TokenService, type TokenSubject } from "./tokens.js";

/** The structural principal every authenticator of the gateway resolves to. */
export interface PrincipalLike {
  tenantId: string;
  userId: string | undefined;
  keyId?: string | undefined;
}

export interface HeaderAuthenticator<P extends PrincipalLike = PrincipalLike> {
  authenticate(headers: Headers): Promise<P>;
}

/** The API key lookups token checks need (`store.apiKeys`). */
export interface KeyStatusSource {
  get(tenantId: string, keyId: string): Promise<Pick<ApiKeyRecord, "revokedAt" | "expiresAt"> | undefined>;
}

export interface SubjectCheckerOptions {
  keys: KeyStatusSource;
  /** A key's status is re-read at most this long after the last read (0: every call). */
  recheckMs: number;
  now?: () => Date;
}

/** Checks a token's subject against its API key, caching each answer for `recheckMs`. */
export interface SubjectChecker {
  /** Resolves when the subject may act; rejects `unauthenticated` when its key no longer works. */
  check(subject: TokenSubject, fresh?: boolean): Promise<void>;
}

const MAX_CACHED_KEYS = 10_000;

export function createSubjectChecker(opts: SubjectCheckerOptions): SubjectChecker {
  const now = opts.now ?? (() => new Date());
  const cache = new Map<string, { at: number; usable: "ok" | "revoked" | "expired" | "unknown"; expiresAt: Date | undefined }>();
  return {
    async check(subject, fresh = false) {
      if (subject.keyId === undefined) return;
      const id = `${subject.tenantId}\u0000${subject.keyId}`;
      const t = now();
      let hit = cache.get(id);
      if (fresh || hit === undefined || t.getTime() - hit.at >= opts.recheckMs) {
        const key = await opts.keys.get(subject.tenantId, subject.keyId);
        const usable = key === undefined ? "unknown" : key.revokedAt !== undefined && key.revokedAt <= t ? "revoked" : "ok";
        hit = { at: t.getTime(), usable, expiresAt: key?.expiresAt };
        if (cache.size >= MAX_CACHED_KEYS) cache.clear();
        cache.set(id, hit);
      }
      if (hit.usable === "ok" && hit.expiresAt !== undefined && hit.expiresAt <= t) hit.usable = "expired";
      switch (hit.usable) {
        case "ok":
          return;
        case "revoked":
          throw tokenRefused("The gateway API key this session was signed in with was revoked; sign in again with a valid key.");
        case "expired":
          throw tokenRefused("The gateway API key this session was signed in with has expired; sign in again with a valid key.");
        case "unknown":
          throw tokenRefused("The gateway API key this session was signed in with no longer exists; sign in again with a valid key.");
      }
    },
  };
}

/** The Bearer of a request when it is a JWT (`x-gateway-api-key` wins: it is never a token). */
export function bearerToken(headers: Headers): string | undefined {
  if (headers.get("x-gateway-api-key")) return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization")?.trim() ?? "");
  // Cursor's IDE may send `<user id>::<token>`.
  const token = m?.[1]?.split("::").at(-1);
  return token !== undefined && looksLikeJwt(token) ? token : undefined;
}

/** Verifies `token` as `kind` and checks its key; rejects `unauthenticated` with the reason. */
export async function verifiedSubject(opts: { tokens: TokenService; checker: SubjectChecker }, token: string, kind: TokenKind, freshKey = false): Promise<TokenSubject> {
  const v = await opts.tokens.verify(token, kind);
  if (!v.ok) {
    switch (v.reason) {
      case "expired":
        throw tokenRefused(`The gateway session ${kind} token has expired; refresh it or sign in again.`, true);
      case "wrong_kind":
        throw tokenRefused(kind === "access" ? "A refresh token cannot authorize a call; send the access token." : "This is not a refresh token.");
      case "invalid":
        throw tokenRefused("The session token was not issued by this gateway (bad signature, unknown key id or malformed).");
    }
  }
  await opts.checker.check(v.subject, freshKey);
  return v.subject;
}

/**
 * Wraps the process's authenticator: JWT Bearers are gateway tokens, everything else is the
 * base authenticator's. The resolved principal is the token's subject (tenant, user, key).
 */
export function withTokens<P extends PrincipalLike>(base: HeaderAuthenticator<P>, opts: { tokens: TokenService; checker: SubjectChecker }): HeaderAuthenticator<P | TokenSubject> {
  const { checker } = opts;
  return {
    async authenticate(headers) {
      const token = bearerToken(headers);
      if (token === undefined) return base.authenticate(headers);
      return verifiedSubject({ tokens: opts.tokens, checker }, token, "access");
    },
  };
}
