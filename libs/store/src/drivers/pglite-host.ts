/**
 * The embedded store's thread: every PGlite database of the process lives here, off the event
 * loop that serves streams (docs/architecture.md "The embedded store's thread"). PGlite runs
 * Postgres compiled to WASM synchronously on the thread that calls it, ~0.5–3 ms per statement;
 * on the main thread that was a quarter of an embedded gateway's busy time under load, and every
 * stream waited behind it. The process's side (pglite.ts) sends requests (pglite-messages.ts);
 * this side runs them in arrival order per database under PGlite's own locks, as before.
 */
import { parentPort } from "node:worker_threads";
import { PGlite, protocol, type Transaction } from "@electric-sql/pglite";
import { asText, statementNames, TEXT_RESULT_OIDS } from "./opened.js";
import { errorToCross, type HostReply, type HostRequest } from "./pglite-messages.js";

/**
 * Date/time types as text, like drizzle's PGlite session (opened.ts `TEXT_RESULT_OIDS`), set on
 * the client rather than passed to each `query`: PGlite copies its whole parser table into every
 * query given `parsers` (~0.1 ms each, measured). drizzle's queries ask for the same parsers,
 * which cannot cross the thread; these stand in for them. PGlite registers array parsers after
 * start, so an array of these comes back as an array of text (no rendered read returns one).
 */
const PARSERS = Object.fromEntries(TEXT_RESULT_OIDS.map((oid) => [oid, asText]));

interface OpenTransaction {
  tx: Transaction;
  /** Settles the transaction's callback: resolve commits, reject rolls back. */
  commit: () => void;
  rollback: () => void;
  /** PGlite's `transaction` call, settled once COMMIT or ROLLBACK ran. */
  finished: Promise<void>;
}

interface Database {
  client: PGlite;
  prepared: (text: string, params: readonly unknown[]) => Promise<{ rows: unknown[] }>;
  transactions: Map<number, OpenTransaction>;
}

const port = parentPort;
if (!port) throw new Error("pglite-host.ts runs as a worker thread (pglite.ts starts it)");

const databases = new Map<number, Database>();
let nextHandle = 1;

function database(handle: number): Database {
  const d = databases.get(handle);
  if (!d) throw new Error(`embedded database ${handle} is closed`);
  return d;
}

async function serve(req: HostRequest): Promise<unknown> {
  switch (req.op) {
    case "open": {
      const client = new PGlite({ ...(req.dataDir === undefined ? {} : { dataDir: req.dataDir }), parsers: PARSERS });
      await client.waitReady;
      const handle = nextHandle++;
      databases.set(handle, { client, prepared: preparedQueries(client), transactions: new Map() });
      return handle;
    }
    case "prepared":
      return database(req.db).prepared(req.text, req.params);
    case "query": {
      const d = database(req.db);
      const on = req.tx === undefined ? d.client : d.transactions.get(req.tx)?.tx;
      if (!on) throw new Error(`transaction ${req.tx} of embedded database ${req.db} has ended`);
      const r = await on.query(req.sql, req.params as unknown[], { rowMode: req.rowMode });
      // `blob` (COPY output) is never asked for; the rest is plain data.
      return { rows: r.rows, fields: r.fields, affectedRows: r.affectedRows };
    }
    case "begin":
      return begin(database(req.db));
    case "end": {
      const d = database(req.db);
      const open = d.transactions.get(req.tx);
      if (!open) throw new Error(`transaction ${req.tx} of embedded database ${req.db} has ended`);
      d.transactions.delete(req.tx);
      if (req.commit) open.commit();
      else open.rollback();
      await open.finished.catch((e: unknown) => {
        if (req.commit || !(e instanceof RolledBack)) throw e;
      });
      return undefined;
    }
    case "close": {
      const d = databases.get(req.db);
      databases.delete(req.db);
      await d?.client.close();
      return undefined;
    }
  }
}

class RolledBack extends Error {}

let nextTransaction = 1;

/**
 * Opens a PGlite transaction whose callback waits for the process's `end`: the process runs
 * drizzle's transaction body, whose queries come here with the transaction's handle.
 */
function begin(d: Database): Promise<number> {
  return new Promise((resolve, reject) => {
    const handle = nextTransaction++;
    let started = false;
    let commit!: () => void;
    let rollback!: () => void;
    const decided = new Promise<void>((res, rej) => {
      commit = res;
      rollback = () => rej(new RolledBack("rolled back by the caller"));
    });
    const finished = d.client.transaction(async (tx) => {
      started = true;
      d.transactions.set(handle, { tx, commit, rollback, finished });
      resolve(handle);
      await decided;
    });
    finished.catch((e: unknown) => {
      if (!started) reject(e);
    });
  });
}

port.on("message", (req: HostRequest) => {
  serve(req).then(
    (value) => port.postMessage({ id: req.id, ok: true, value } satisfies HostReply),
    (e: unknown) => port.postMessage({ id: req.id, ok: false, error: errorToCross(e) } satisfies HostReply),
  );
});

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
function preparedQueries(client: PGlite): Database["prepared"] {
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
