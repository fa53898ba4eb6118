/** TenantRepository over drizzle. Users are always read and written within one tenant. */
import { and, asc, eq } from "drizzle-orm";
import { isUniqueViolation, type Db } from "../db.js";
import { StoreError } from "../errors.js";
import { tenants, users } from "../schema.js";
import type { BudgetLimits, RetentionPolicy, TenantLimits, TenantRecord, TenantRepository, UserRecord } from "./types.js";

export function createTenantRepository(db: Db): TenantRepository {
  return {
    async create(t) {
      try {
        const [row] = await db
          .insert(tenants)
          .values({ tenantId: t.tenantId, name: t.name, retention: t.retention ?? "full", limits: limitsJson(t.limits ?? {}) })
          .returning();
        return toTenant(must(row));
      } catch (e) {
        if (isUniqueViolation(e)) throw new StoreError("already_exists", `tenant ${t.tenantId} already exists`, { cause: e });
        throw e;
      }
    },

    async ensure(t) {
      await db.insert(tenants).values({ tenantId: t.tenantId, name: t.name }).onConflictDoNothing();
      const [row] = await db.select().from(tenants).where(eq(tenants.tenantId, t.tenantId));
      return toTenant(must(row));
    },

    async get(tenantId) {
      const [row] = await db.select().from(tenants).where(eq(tenants.tenantId, tenantId));
      return row === undefined ? undefined : toTenant(row);
    },

    async list() {
      return (await db.select().from(tenants).orderBy(asc(tenants.tenantId))).map(toTenant);
    },

    async update(tenantId, patch) {
      const set: Partial<typeof tenants.$inferInsert> = {};
      if (patch.name !== undefined) set.name = patch.name;
      if (patch.retention !== undefined) set.retention = patch.retention;
      if (patch.limits !== undefined) set.limits = limitsJson(patch.limits);
      if (patch.policy !== undefined) set.policy = limitsJson(patch.policy);
      if (Object.keys(set).length === 0) return this.get(tenantId);
      const [row] = await db.update(tenants).set(set).where(eq(tenants.tenantId, tenantId)).returning();
      return row === undefined ? undefined : toTenant(row);
    },

    async createUser(u) {
      try {
        const [row] = await db
          .insert(users)
          .values({ tenantId: u.tenantId, userId: u.userId, externalId: u.externalId ?? null, email: u.email ?? null, limits: limitsJson(u.limits ?? {}) })
          .returning();
        return toUser(must(row));
      } catch (e) {
        if (isUniqueViolation(e)) throw new StoreError("already_exists", `user ${u.userId} (or its external id) already exists in tenant ${u.tenantId}`, { cause: e });
        throw e;
      }
    },

    async getUser(tenantId, userId) {
      const [row] = await db.select().from(users).where(and(eq(users.tenantId, tenantId), eq(users.userId, userId)));
      return row === undefined ? undefined : toUser(row);
    },

    async findUserByExternalId(tenantId, externalId) {
      const [row] = await db.select().from(users).where(and(eq(users.tenantId, tenantId), eq(users.externalId, externalId)));
      return row === undefined ? undefined : toUser(row);
    },

    async listUsers(tenantId) {
      return (await db.select().from(users).where(eq(users.tenantId, tenantId)).orderBy(asc(users.userId))).map(toUser);
    },

    async setUserLimits(tenantId, userId, limits) {
      const [row] = await db
        .update(users)
        .set({ limits: limitsJson(limits) })
        .where(and(eq(users.tenantId, tenantId), eq(users.userId, userId)))
        .returning();
      return row === undefined ? undefined : toUser(row);
    },
  };
}

function must<T>(row: T | undefined): T {
  if (row === undefined) throw new Error("statement returned no row");
  return row;
}

function limitsJson(l: TenantLimits | BudgetLimits | Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(l)) as Record<string, unknown>;
}

function toTenant(r: typeof tenants.$inferSelect): TenantRecord {
  return { tenantId: r.tenantId, name: r.name, retention: r.retention as RetentionPolicy, limits: r.limits as TenantLimits, policy: r.policy, createdAt: r.createdAt };
}

function toUser(r: typeof users.$inferSelect): UserRecord {
  return {
    tenantId: r.tenantId,
    userId: r.userId,
    externalId: r.externalId ?? undefined,
    email: r.email ?? undefined,
    limits: r.limits as BudgetLimits,
    createdAt: r.createdAt,
  };
}
