/**
 * A per-process read-through cache of promises, `ttlMs` per key: the shape every cached
 * repository shares (tenants, routes, prices). The promise is kept, so concurrent readers of a
 * cold key share one statement; a failed read is not kept. Past `maxKeys` it starts over
 * (a bound, not an LRU: the keys are tenants, a few thousand at most).
 */
export interface ReadCache<K, V> {
  get(key: K, load: () => Promise<V>): Promise<V>;
  forget(key: K): void;
  clear(): void;
  /**
   * Awaits a write of the cached data and then drops `key` (every key without one), whether the
   * write succeeded or not: a read during the write may have cached the old value.
   */
  afterWrite<T>(write: Promise<T>, key?: K): Promise<T>;
}

export function createReadCache<K, V>(ttlMs: number, maxKeys: number): ReadCache<K, V> {
  const entries = new Map<K, { at: number; value: Promise<V> }>();
  return {
    get(key, load) {
      const hit = entries.get(key);
      if (hit && Date.now() - hit.at <= ttlMs) return hit.value;
      if (entries.size >= maxKeys) entries.clear();
      const value = load();
      const entry = { at: Date.now(), value };
      entries.set(key, entry);
      value.catch(() => {
        if (entries.get(key) === entry) entries.delete(key);
      });
      return value;
    },
    forget: (key) => void entries.delete(key),
    clear: () => entries.clear(),
    async afterWrite(write, key) {
      try {
        return await write;
      } finally {
        if (key === undefined) entries.clear();
        else entries.delete(key);
      }
    },
  };
}
