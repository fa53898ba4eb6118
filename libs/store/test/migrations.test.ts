/**
 * Guards on the committed migration files themselves, independent of any database.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { knownMigrations } from "../src/index.js";

const folder = join(import.meta.dirname, "..", "migrations");

describe("committed migrations", () => {
  it("each journal entry has its SQL file", () => {
    for (const tag of knownMigrations()) {
      expect(() => readFileSync(join(folder, `${tag}.sql`), "utf8")).not.toThrow();
    }
  });

  it("never name a Postgres schema, so they apply inside whichever schema search_path selects", () => {
    // drizzle-kit writes `"public".` for foreign-key targets and schema-qualified tables;
    // either would escape a per-test or per-deployment schema.
    for (const tag of knownMigrations()) {
      const text = readFileSync(join(folder, `${tag}.sql`), "utf8");
      expect(text, tag).not.toMatch(/"public"\s*\./i);
      expect(text, tag).not.toMatch(/\bcreate\s+schema\b/i);
    }
  });
});
