/**
 * Embedded driver: PGlite (Postgres compiled to WASM) in this process. PGlite has a single
 * connection and runs each transaction under a mutex that also holds back standalone
 * queries, so transactions are serialised by construction.
 */
import { PGlite, protocol } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { migrationConfig } from "../migrations.js";
import { asText, statementNames, TEXT_RESULT_OIDS, type OpenedDatabase } from "./opened.js";

/**
 * Date/time types as text, like drizzle's PGlite session (opened.ts `TEXT_RESULT_OIDS`), set on
 * the client rather than passed to each `query`: PGlite copies its whole parser table into every
 * query given `parsers` (~0.1 ms each, measured). drizzle's queries pass the same parsers, so
 * theirs read as before. PGlite registers array parsers after start, so an array of these comes
 * back as an array of text (no rendered read returns one).
 */
const PARSERS = Object.fromEntries(TEXT_RESULT_OIDS.map((oid) => [oid, asText]));

/** Opens (creating if needed) the database at `dataDir`, or an in-memory one, and migrates it. */
export async function openPglite(dataDir: string | undefined): Promise<OpenedDatabase> {
  const client = new PGlite({ ...(dataDir === undefined ? {} : { dataDir }), parsers: PARSERS });
  const db = drizzle({ client });
  const config = migrationConfig();
  try {
    await migrate(db, config);
  } catch (e) {
    await client.close();
    throw e;
  }
  return {
    db,
    migrationConfig: config,
    query: preparedQueries(client),
    close: () => client.close(),
  };
}

const { serialize, messages: backend } = protocol;

function joined(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * `query` over named prepared statements. PGlite's own `query` parses, describes, binds,
 * describes and executes every call as five entries into the WASM module, planning the text
 * anew each time (a rendered history append ~1.3–1.9 ms of CPU, measured); prepared once per
 * text (parse + describe, for the parameter types), each call is one bind/describe/execute/sync
 * message: ~0.45 ms for the same append (docs/benchmarks.md "Prepared statements"). Parameters
 * are serialized and rows parsed exactly as PGlite's `query` does (its serializers by parameter
 * type, its parsers by column type); it runs under the same two locks, so it never lands inside
 * another caller's transaction, and syncs the data directory afterwards as `query` does.
 */
function preparedQueries(client: PGlite): OpenedDatabase["query"] {
  const nameOf = statementNames();
  const prepared = new Map<string, Promise<number[]>>();
  const prepare = (name: string, text: string): Promise<number[]> => {
    let types = prepared.get(name);
    if (!types) {
      types = client
        .execProtocol(joined([serialize.parse({ name, text, types: [] }), serialize.describe({ type: "S", name }), serialize.sync()]), { syncToFs: false })
        .then(({ messages }) => messages.find((m) => m instanceof backend.ParameterDescriptionMessage)?.dataTypeIDs ?? []);
      // A failed parse (a bad statement) is not cached: the next call reports it again.
      types.catch(() => prepared.delete(name));
      prepared.set(name, types);
    }
    return types;
  };
  return (text, params) =>
    client._runExclusiveTransaction(() =>
      client._runExclusiveQuery(async () => {
        const name = nameOf(text);
        const types = await prepare(name, text);
        const values = params.map((v, i) => {
          if (v === null || v === undefined) return null;
          const serializer = client.serializers[types[i] ?? 0];
          return serializer ? serializer(v) : String(v);
        });
        const { messages } = await client.execProtocol(
          joined([serialize.bind({ statement: name, values }), serialize.describe({ type: "P" }), serialize.execute({}), serialize.sync()]),
        );
        let fields: InstanceType<typeof backend.RowDescriptionMessage>["fields"] = [];
        const rows: Record<string, unknown>[] = [];
        for (const m of messages) {
          if (m instanceof backend.RowDescriptionMessage) fields = m.fields;
          else if (m instanceof backend.DataRowMessage) {
            const row: Record<string, unknown> = {};
            m.fields.forEach((v, i) => {
              const f = fields[i]!;
              const parse = client.parsers[f.dataTypeID];
              row[f.name] = v === null ? null : parse ? parse(v, f.dataTypeID) : v;
            });
            rows.push(row);
          }
        }
        return { rows };
      }),
    );
}
