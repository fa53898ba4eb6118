/** RouteRepository over drizzle: one row per (tenant, Cursor model id). */
import { and, asc, eq, sql } from "drizzle-orm";
import type { Db } from "../db.js";
import { tenantRoutes } from "../schema.js";
import type { RouteRepository, TenantRouteRecord } from "./types.js";

export function createRouteRepository(db: Db): RouteRepository {
  const upsert = (d: Pick<Db, "insert">, tenantId: string, modelId: string, targets: Record<string, unknown>[], catalogue: Record<string, unknown> = {}) =>
    d
      .insert(tenantRoutes)
      .values({ tenantId, modelId, targets, catalogue })
      .onConflictDoUpdate({ target: [tenantRoutes.tenantId, tenantRoutes.modelId], set: { targets, catalogue, updatedAt: sql`now()` } })
      .returning();

  return {
    async set(tenantId, modelId, targets, catalogue) {
      const [row] = await upsert(db, tenantId, modelId, targets, catalogue);
      if (row === undefined) throw new Error("upsert returned no row");
      return toRoute(row);
    },

    async apply(tenantId, routes) {
      if (routes.length === 0) return;
      await db.transaction(async (tx) => {
        for (const r of routes) await upsert(tx, tenantId, r.modelId, r.targets, r.catalogue);
      });
    },

    async list(tenantId) {
      return (await db.select().from(tenantRoutes).where(eq(tenantRoutes.tenantId, tenantId)).orderBy(asc(tenantRoutes.modelId))).map(toRoute);
    },

    async delete(tenantId, modelId) {
      const gone = await db
        .delete(tenantRoutes)
        .where(and(eq(tenantRoutes.tenantId, tenantId), eq(tenantRoutes.modelId, modelId)))
        .returning({ modelId: tenantRoutes.modelId });
      return gone.length > 0;
    },
  };
}

function toRoute(r: typeof tenantRoutes.$inferSelect): TenantRouteRecord {
  return { tenantId: r.tenantId, modelId: r.modelId, targets: r.targets, catalogue: r.catalogue, updatedAt: r.updatedAt };
}
