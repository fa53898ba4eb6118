/**
 * A real PostgreSQL for tests: the server at DATABASE_URL (default the local CI one), or,
 * only when that does not answer and a Docker engine exists, a throw-away testcontainers
 * Postgres. Otherwise it rejects with a message saying what to do: never a silent skip.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test";

export interface TestPostgres {
  url: string;
  /** Stops the container, if one was started. */
  stop(): Promise<void>;
}

export async function startTestPostgres(
  url: string = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
): Promise<TestPostgres> {
  const unreachable = await probe(url);
  if (unreachable === undefined) return { url, stop: async () => {} };

  const { GenericContainer, Wait, getContainerRuntimeClient } = await import("testcontainers");
  try {
    await getContainerRuntimeClient();
  } catch (noDocker) {
    throw new Error(
      `PostgreSQL did not answer at ${redact(url)} (${unreachable.message}) and no Docker engine is available ` +
        `for testcontainers (${String(noDocker)}). Start Postgres or set DATABASE_URL.`,
      { cause: unreachable },
    );
  }
  const container = await new GenericContainer("postgres:16-alpine")
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
    .withExposedPorts(5432)
    // The image restarts the server once after init: wait for the second "ready".
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  return {
    url: `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/postgres`,
    stop: async () => {
      await container.stop();
    },
  };
}

/** A fresh schema name for one test file. */
export function uniqueSchema(prefix = "store_test"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}

export async function dropSchemas(url: string, schemas: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const s of schemas) await client.query(`drop schema if exists "${s}" cascade`);
  } finally {
    await client.end();
  }
}

/** undefined when `select 1` succeeds; the failure otherwise. */
async function probe(url: string): Promise<Error | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query("select 1");
    return undefined;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  } finally {
    await client.end().catch(() => {});
  }
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}
