/** PriceRepository over drizzle: append-only versions per (provider, model). */
import { and, asc, desc, eq, lte, sql } from "drizzle-orm";
import type { Db } from "../db.js";
import { prices } from "../schema.js";
import type { PriceRecord, PriceRepository } from "./types.js";

export function createPriceRepository(db: Db): PriceRepository {
  return {
    async set(p) {
      return db.transaction(async (tx) => {
        // Serialise versioning of one (provider, model) across connections.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`byok-prices:${p.provider}:${p.model}`}))`);
        const [last] = await tx
          .select({ version: prices.version })
          .from(prices)
          .where(and(eq(prices.provider, p.provider), eq(prices.model, p.model)))
          .orderBy(desc(prices.version))
          .limit(1);
        const [row] = await tx
          .insert(prices)
          .values({
            provider: p.provider,
            model: p.model,
            version: (last?.version ?? 0) + 1,
            inputPerMTok: p.inputPerMTok,
            outputPerMTok: p.outputPerMTok,
            cacheReadPerMTok: p.cacheReadPerMTok,
            cacheWritePerMTok: p.cacheWritePerMTok,
            ...(p.effectiveFrom === undefined ? {} : { effectiveFrom: p.effectiveFrom }),
          })
          .returning();
        if (row === undefined) throw new Error("insert returned no row");
        return toPrice(row);
      });
    },

    async at(provider, model, at = new Date()) {
      const [row] = await db
        .select()
        .from(prices)
        .where(and(eq(prices.provider, provider), eq(prices.model, model), lte(prices.effectiveFrom, at)))
        .orderBy(desc(prices.effectiveFrom), desc(prices.version))
        .limit(1);
      return row === undefined ? undefined : toPrice(row);
    },

    async list() {
      return (await db.select().from(prices).orderBy(asc(prices.provider), asc(prices.model), asc(prices.version))).map(toPrice);
    },
  };
}

function toPrice(r: typeof prices.$inferSelect): PriceRecord {
  return {
    provider: r.provider,
    model: r.model,
    version: r.version,
    inputPerMTok: r.inputPerMTok,
    outputPerMTok: r.outputPerMTok,
    cacheReadPerMTok: r.cacheReadPerMTok,
    cacheWritePerMTok: r.cacheWritePerMTok,
    effectiveFrom: r.effectiveFrom,
  };
}
