/**
 * CredentialRepository over drizzle and a KeyEncryptionKey. Plaintext exists only in memory:
 * the row holds AES-256-GCM ciphertext, iv, tag and key version; the AAD binds each row to its
 * (tenant, ref), so copying a row to another tenant or ref makes it fail to open.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import type { KeyEncryptionKey } from "../crypto/kek.js";
import type { Db } from "../db.js";
import { StoreError } from "../errors.js";
import { providerCredentials } from "../schema.js";
import type { GatewayCredential } from "@byok/protocol";
import type { CredentialInfo, CredentialRepository } from "./types.js";

export function createCredentialRepository(db: Db, kek: KeyEncryptionKey | undefined): CredentialRepository {
  const need = (): KeyEncryptionKey => {
    if (kek === undefined) throw new StoreError("no_kek", "provider credentials need a key-encryption key (createStore({ kek }))");
    return kek;
  };
  const where = (tenantId: string, ref: string) => and(eq(providerCredentials.tenantId, tenantId), eq(providerCredentials.ref, ref));

  return {
    async put(tenantId, ref, credential) {
      const sealed = await need().encrypt(new TextEncoder().encode(JSON.stringify(credential)), aad(tenantId, ref));
      const values = { ciphertext: sealed.ciphertext, iv: sealed.iv, tag: sealed.tag, keyVersion: sealed.keyVersion };
      const [row] = await db
        .insert(providerCredentials)
        .values({ tenantId, ref, ...values })
        .onConflictDoUpdate({ target: [providerCredentials.tenantId, providerCredentials.ref], set: { ...values, updatedAt: sql`now()` } })
        .returning();
      if (row === undefined) throw new Error("upsert returned no row");
      return toInfo(row);
    },

    async get(tenantId, ref) {
      const [row] = await db.select().from(providerCredentials).where(where(tenantId, ref));
      if (row === undefined) return undefined;
      const plain = await need().decrypt(row, aad(tenantId, ref));
      return parseCredential(new TextDecoder().decode(plain));
    },

    async list(tenantId) {
      return (await db.select().from(providerCredentials).where(eq(providerCredentials.tenantId, tenantId)).orderBy(asc(providerCredentials.ref))).map(toInfo);
    },

    async delete(tenantId, ref) {
      return (await db.delete(providerCredentials).where(where(tenantId, ref)).returning({ ref: providerCredentials.ref })).length > 0;
    },
  };
}

function aad(tenantId: string, ref: string): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(["provider_credentials", tenantId, ref]));
}

function toInfo(r: typeof providerCredentials.$inferSelect): CredentialInfo {
  return { tenantId: r.tenantId, ref: r.ref, keyVersion: r.keyVersion, updatedAt: r.updatedAt };
}

/** Validates decrypted JSON against GatewayCredential; the error never quotes the value. */
function parseCredential(text: string): GatewayCredential {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    // JSON.parse messages quote the input: never let them out.
    throw new StoreError("invalid_argument", "stored credential is not JSON");
  }
  if (typeof v === "object" && v !== null && "kind" in v) {
    if (v.kind === "api_key" && "apiKey" in v && typeof v.apiKey === "string") return { kind: "api_key", apiKey: v.apiKey };
    if (v.kind === "aws" && "accessKeyId" in v && "secretAccessKey" in v && typeof v.accessKeyId === "string" && typeof v.secretAccessKey === "string") {
      const token = "sessionToken" in v && typeof v.sessionToken === "string" ? { sessionToken: v.sessionToken } : {};
      return { kind: "aws", accessKeyId: v.accessKeyId, secretAccessKey: v.secretAccessKey, ...token };
    }
  }
  throw new StoreError("invalid_argument", "stored credential has an unknown shape");
}
