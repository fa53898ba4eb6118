import { Placeholder, sql, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import { PgDialect, type AnyPgColumn, type PgDatabase, type PgQueryResultHKT } from "drizzle-orm/pg-core";

/** The drizzle handle every repository receives (either driver). */
export type Db = PgDatabase<PgQueryResultHKT>;

/** True when `e` (or an error in its cause chain) is a Postgres unique violation (23505). */
export function isUniqueViolation(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur !== undefined && cur !== null && depth < 5; depth++) {
    if (typeof cur === "object" && "code" in cur && cur.code === "23505") return true;
    cur = typeof cur === "object" && "cause" in cur ? cur.cause : undefined;
  }
  return false;
}

/** The rows of a raw statement's result (both drivers answer `{ rows }`). */
export function rowsOf(result: unknown): unknown[] {
  const rows = (result as { rows?: unknown }).rows;
  return Array.isArray(rows) ? rows : [];
}

/** Unqualified column names for a raw statement's column or conflict list: `"a", "b"`. */
export function columnList(cols: readonly AnyPgColumn[]): SQL {
  return sql.join(cols.map((col) => sql.identifier(col.name)), sql`, `);
}

/** One unqualified column name, as a raw statement's SET or RETURNING names it. */
export function columnName(col: AnyPgColumn): SQL {
  return columnList([col]);
}

/** A statement rendered to SQL text once, and the name of the value each `$n` takes. */
export interface RenderedStatement {
  text: string;
  params: readonly string[];
}

const dialect = new PgDialect();

/**
 * drizzle's query builders without a connection, for building a statement to render: both drivers
 * render with the same PgDialect, so the text is the one drizzle would send on either.
 */
const builders: StatementBuilders = drizzle.mock();

/** The query builders a rendered statement is built with. */
export type StatementBuilders = Pick<Db, "select" | "insert">;

/**
 * Renders a statement built with drizzle (tables and columns from the schema, values as named
 * placeholders) to SQL text once: a `sql` template, or a builder chain of `qb` ending in
 * `.getSQL()` (the same text drizzle sends for that chain). The per-turn statements (README "Hot
 * statements rendered once") run it with `bind` instead of having drizzle rebuild the same text on
 * every call, which cost ~0.3–0.4 ms of CPU each (docs/benchmarks.md, "Statements rendered once").
 */
export function renderStatement(build: (value: (name: string) => SQL, qb: StatementBuilders) => SQL): RenderedStatement {
  const q = dialect.sqlToQuery(build((name) => sql`${sql.placeholder(name)}`, builders));
  return {
    text: q.sql,
    params: q.params.map((p) => {
      if (!(p instanceof Placeholder)) throw new Error("renderStatement: a value was given inline; name it with value()");
      return p.name as string;
    }),
  };
}

/** The positional parameters of a rendered statement, from its named values (each already as the driver takes it). */
export function bind(statement: RenderedStatement, values: Readonly<Record<string, unknown>>): unknown[] {
  return statement.params.map((name) => {
    if (!(name in values)) throw new Error(`bind: no value for ${name}`);
    return values[name];
  });
}

/** A value as `col` sends it to the driver (drizzle's own encoding: JSON for jsonb, ISO text for timestamps); null stays null. */
export function driverValue(col: AnyPgColumn, v: unknown): unknown {
  return v === null || v === undefined ? null : col.mapToDriverValue(v);
}

/** What a column decodes to, as drizzle types a selected column (nullable unless NOT NULL). */
export type Decoded<F extends Record<string, AnyPgColumn>> = {
  [K in keyof F]: F[K]["_"]["notNull"] extends true ? F[K]["_"]["data"] : F[K]["_"]["data"] | null;
};

/**
 * A rendered read's row (keyed by column name) decoded as drizzle's select or returning decodes
 * it: each field by its column's own `mapFromDriverValue` (timestamps from the text the driver
 * leaves them as, see drivers/opened.ts; bytea to Uint8Array; bigint modes), null left null.
 */
export function rowReader<F extends Record<string, AnyPgColumn>>(fields: F): (row: unknown) => Decoded<F> {
  const entries = Object.entries(fields);
  return (row) => {
    const raw = row as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [field, col] of entries) {
      const v = raw[col.name];
      out[field] = v === null ? null : col.mapFromDriverValue(v);
    }
    return out as Decoded<F>;
  };
}
