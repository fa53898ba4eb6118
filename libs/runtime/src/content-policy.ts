import type { ContentPolicy } from "@byok/agent";
import { TenantPolicySchema } from "@byok/config";
import type { ContentMode, GatewayStore } from "@byok/store";

/**
 * Retention and ghost mode (issue 6 §6). Ghost-mode runs, runs of a tenant whose policy
 * enforces privacy mode (as if every request said `x-ghost-mode: true`) and tenants with
 * retention `metadata` / `none` run with content kept in the run's own memory only
 * (`ephemeral`): no history, blob or checkpoint row is written; `metadata` still keeps the
 * conversation row (ids and timestamps). The caller caches tenant reads (`cacheTenantReads`).
 */
export function createStoreContentPolicy(store: Pick<GatewayStore, "tenants">): ContentPolicy {
  return {
    async modeFor(tenantId, principal): Promise<ContentMode> {
      if (principal.ghostMode) return "ephemeral";
      const t = await store.tenants.get(tenantId);
      if (TenantPolicySchema.safeParse(t?.policy ?? {}).data?.privacyMode === "enforced") return "ephemeral";
      const retention = t?.retention ?? "full";
      if (retention === "full") return "store";
      return retention === "metadata" ? "ephemeral_keep_conversation" : "ephemeral";
    },
  };
}

