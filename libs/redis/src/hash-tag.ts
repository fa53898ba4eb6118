/**
 * Redis Cluster hash tags. Every key that one script touches must be in one slot, so those
 * keys share a tag `{…}` built from ids. Ids are escaped before they enter the tag: `%`, `{`,
 * `}` and `:` become `%25`, `%7B`, `%7D`, `%3A`. A `}` in an id would otherwise end the tag
 * early, and a `:` would let ids "a:b" + "c" collide with "a" + "b:c".
 */
export function escapeId(id: string): string {
  return id.replace(/[%{}:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

/** The hash tag of these ids, braces included: `{a:b}` (each id escaped). */
export function hashTag(...ids: string[]): string {
  return `{${ids.map(escapeId).join(":")}}`;
}

/** Checks a key prefix: non-empty, and no braces (they would move the hash tag). */
export function assertKeyPrefix(prefix: string, what = "key prefix"): void {
  if (prefix.length === 0 || /[{}]/.test(prefix)) {
    throw new Error(`invalid ${what} ${JSON.stringify(prefix)}: must be non-empty and contain no braces`);
  }
}
