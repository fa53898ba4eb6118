/**
 * A tenant's model catalogue: one entry per route, described by the route's `catalogue`
 * settings (display name, aliases, thinking, max mode, effort variants), plus the tenant's
 * default model. Built only from route ids and catalogue settings, never from targets, so no
 * provider key, base URL or upstream model name can reach an answer built from it.
 */
import { RouteCatalogueSchema, TenantPolicySchema, type RouteCatalogue } from "@byok/config";
import type { GatewayStore } from "@byok/store";

export interface CatalogueModel extends RouteCatalogue {
  /** The Cursor model id (the route's `modelId`). */
  id: string;
  displayName: string;
  /** When the route was last changed (OpenAI's `created`). */
  updatedAt: Date;
}

export interface TenantCatalogue {
  tenantId: string;
  /** Every routed model, hidden ones included, by id. */
  models: CatalogueModel[];
  /** The default model: the tenant's own, else the process default, else the first listed; undefined without routes. */
  defaultModel: CatalogueModel | undefined;
  /** The tenant forces privacy mode on every request. */
  privacyEnforced: boolean;
}

export type CatalogueStore = Pick<GatewayStore, "routes" | "tenants">;

/**
 * Reads the tenant's routes and policy. A stored catalogue or policy that no longer parses
 * (written by an older build) counts as absent rather than failing the call.
 */
export async function loadTenantCatalogue(store: CatalogueStore, tenantId: string, processDefaultModel?: string): Promise<TenantCatalogue> {
  const [routes, tenant] = await Promise.all([store.routes.list(tenantId), store.tenants.get(tenantId)]);
  const models = routes.map((r): CatalogueModel => {
    const c = RouteCatalogueSchema.safeParse(r.catalogue ?? {}).data ?? RouteCatalogueSchema.parse({});
    return { ...c, id: r.modelId, displayName: c.displayName ?? r.modelId, updatedAt: r.updatedAt };
  });
  const policy = TenantPolicySchema.safeParse(tenant?.policy ?? {}).data ?? TenantPolicySchema.parse({});
  const find = (id: string | undefined) => (id === undefined ? undefined : models.find((m) => m.id === id || m.aliases.includes(id)));
  const defaultModel = find(policy.defaultModel) ?? find(processDefaultModel) ?? models.find((m) => !m.hidden);
  return { tenantId, models, defaultModel, privacyEnforced: policy.privacyMode === "enforced" };
}

const MAX_CACHED_TENANTS = 10_000;

/** `privacyMode: enforced` of a tenant's policy, each answer cached for `cacheMs`. */
export function createPrivacyLookup(store: Pick<GatewayStore, "tenants">, cacheMs: number): (tenantId: string) => Promise<boolean> {
  const cache = new Map<string, { at: number; enforced: boolean }>();
  return async (tenantId) => {
    const hit = cache.get(tenantId);
    if (hit && Date.now() - hit.at <= cacheMs) return hit.enforced;
    const tenant = await store.tenants.get(tenantId);
    const enforced = TenantPolicySchema.safeParse(tenant?.policy ?? {}).data?.privacyMode === "enforced";
    if (cache.size >= MAX_CACHED_TENANTS) cache.clear();
    cache.set(tenantId, { at: Date.now(), enforced });
    return enforced;
  };
}

/** The models the picker lists (hidden ones are routed but not listed). */
export function listedModels(c: TenantCatalogue): CatalogueModel[] {
  return c.models.filter((m) => !m.hidden);
}

/**
 * `GET /v1/models`: one body both Cursor (`items: [{id, displayName}]`) and OpenAI-compatible
 * clients (`object: "list", data: [{id, object: "model", created, owned_by}]`) read.
 */
export function modelsListBody(c: TenantCatalogue): {
  object: "list";
  data: { id: string; object: "model"; created: number; owned_by: string }[];
  items: { id: string; displayName: string }[];
} {
  const listed = listedModels(c);
  return {
    object: "list",
    data: listed.map((m) => ({ id: m.id, object: "model", created: Math.floor(m.updatedAt.getTime() / 1000), owned_by: "cursor-byok-gateway" })),
    items: listed.map((m) => ({ id: m.id, displayName: m.displayName })),
  };
}
