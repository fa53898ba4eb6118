import type { ContentPolicy } from "@byok/agent";
import { TenantPolicySchema } from "@byok/config";
import type { ContentMode, GatewayStore } from "@byok/store";

/**
 * Retention and ghost mode (issue 6 §6). Ghost-mode runs, runs of a tenant whose policy
 * enforces privacy mode (as if every request said `x-ghost-mode: true`) and tenants with
 * retention `metadata` / `none` run with content kept in the run's own memory only
 * (`ephemeral`): no history, blob or checkpoint row is written; `metadata` still keeps the
 * conversation row (ids and timestamps). Tenant lookups are cached for `cacheMs`.
 */
export function createStoreContentPolicy(store: Pick<GatewayStore, "tenants">, opts: { cacheMs: number }): ContentPolicy {
  const { cacheMs } = opts;
  const cache = new Map<string, { at: number; retention: "full" | "metadata" | "none"; privacyEnforced: boolean }>();
  return {
    async modeFor(tenantId, principal): Promise<ContentMode> {
      if (principal.ghostMode) return "ephemeral";
      let hit = cache.get(tenantId);
      if (!hit || Date.now() - hit.at > cacheMs) {
        const t = await store.tenants.get(tenantId);
        const privacyEnforced = TenantPolicySchema.safeParse(t?.policy ?? {}).data?.privacyMode === "enforced";
        hit = { at: Date.now(), retention: t?.retention ?? "full", privacyEnforced };
        cache.set(tenantId, hit);
      }
      if (hit.privacyEnforced) return "ephemeral";
      if (hit.retention === "full") return "store";
      return hit.retention === "metadata" ? "ephemeral_keep_conversation" : "ephemeral";
    },
  };
}

