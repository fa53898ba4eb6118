/** AuditRepository over drizzle: append-only, newest first on read. */
import { desc, eq } from "drizzle-orm";
import type { Db } from "../db.js";
import { auditLog } from "../schema.js";
import type { AuditRepository } from "./types.js";

export function createAuditRepository(db: Db): AuditRepository {
  return {
    async append(e) {
      await db.insert(auditLog).values({ tenantId: e.tenantId ?? null, actor: e.actor, action: e.action, target: e.target ?? null, details: e.details });
    },

    async list(q = {}) {
      const base = db.select().from(auditLog);
      const filtered = q.tenantId === undefined ? base : base.where(eq(auditLog.tenantId, q.tenantId));
      const rows = await filtered.orderBy(desc(auditLog.id)).limit(q.limit ?? 100);
      return rows.map((r) => ({
        id: r.id,
        tenantId: r.tenantId ?? undefined,
        actor: r.actor,
        action: r.action,
        target: r.target ?? undefined,
        details: r.details,
        createdAt: r.createdAt,
      }));
    },
  };
}
