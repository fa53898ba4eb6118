/** Assembles the GatewayStore: the conversation Store plus every repository, on one database. */
import type { KeyEncryptionKey } from "./crypto/kek.js";
import type { OpenedDatabase } from "./drivers/opened.js";
import { createDrizzleStore } from "./drizzle-store.js";
import { createAuditRepository } from "./metering/audit-repo.js";
import { createLedgerRepository } from "./metering/ledger-repo.js";
import { createPriceRepository } from "./metering/prices-repo.js";
import { createApiKeyRepository } from "./tenancy/api-keys-repo.js";
import { createCredentialRepository } from "./tenancy/credentials-repo.js";
import { createRouteRepository } from "./tenancy/routes-repo.js";
import { createTenantRepository } from "./tenancy/tenants-repo.js";
import type { GatewayStore } from "./types.js";

export function createGatewayStore(opened: OpenedDatabase, kek: KeyEncryptionKey | undefined): GatewayStore {
  const { db } = opened;
  return {
    ...createDrizzleStore(opened),
    tenants: createTenantRepository(db),
    apiKeys: createApiKeyRepository(db),
    routes: createRouteRepository(db),
    credentials: createCredentialRepository(db, kek),
    prices: createPriceRepository(db),
    ledger: createLedgerRepository(db, opened.query),
    audit: createAuditRepository(db),
  };
}
