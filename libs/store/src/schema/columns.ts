/** Column helpers shared by every table file of the schema. */
import { customType, timestamp } from "drizzle-orm/pg-core";

/**
 * `bytea` as `Uint8Array`. node-postgres returns `Buffer` and PGlite `Uint8Array`; both are
 * normalised to a plain `Uint8Array` so callers and tests see one type.
 */
export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
  toDriver: (value) => value,
  fromDriver: (value) =>
    // A Buffer from node-postgres may be a view into a shared pool slab; copy it out.
    value.constructor === Uint8Array ? value : new Uint8Array(value),
});

export const createdAt = () => timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();
export const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });
