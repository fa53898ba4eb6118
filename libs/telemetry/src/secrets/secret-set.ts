/**
 * Known secret values registered at runtime (a client's BYOK key for the life of a run,
 * a tenant key after decryption). Every scrubber in this package replaces each registered
 * value with `[REDACTED]` wherever it appears inside a string.
 *
 * Guarantees:
 * - Registration is reference counted: the same value registered by two concurrent runs stays
 *   registered until both releases ran. A release function is idempotent.
 * - Values shorter than {@link MIN_SECRET_LENGTH} are not registered (replacing them everywhere
 *   would corrupt ordinary text); they are still redacted under secret-looking key names.
 * - Longer values are replaced first, so a secret that contains another is removed whole.
 */
export interface SecretSet {
  /** Registers `secret`; returns the release function that unregisters it (idempotent). */
  register(secret: string): () => void;
  /** Replaces every registered value inside `text` with `[REDACTED]`. Pure with respect to `text`. */
  scrub(text: string): string;
  /** Number of distinct values currently registered. */
  readonly size: number;
}

export const REDACTED = "[REDACTED]";
export const MIN_SECRET_LENGTH = 6;

export function createSecretSet(): SecretSet {
  const counts = new Map<string, number>();
  let ordered: string[] = [];
  const reorder = (): void => {
    ordered = [...counts.keys()].sort((a, b) => b.length - a.length);
  };
  return {
    register(secret: string): () => void {
      if (typeof secret !== "string" || secret.length < MIN_SECRET_LENGTH) return () => {};
      const before = counts.get(secret) ?? 0;
      counts.set(secret, before + 1);
      if (before === 0) reorder();
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const n = counts.get(secret) ?? 0;
        if (n <= 1) {
          counts.delete(secret);
          reorder();
        } else counts.set(secret, n - 1);
      };
    },
    scrub(text: string): string {
      let out = text;
      for (const s of ordered) if (out.includes(s)) out = out.split(s).join(REDACTED);
      return out;
    },
    get size() {
      return counts.size;
    },
  };
}

/**
 * The process-wide secret set, explicit and exported (not hidden): loggers, `scrubSecrets` and the
 * span scrubbing processor use it unless given another set. Workers register a run's BYOK key here.
 */
export const processSecrets: SecretSet = createSecretSet();

/** Registers `secret` in `set` (default {@link processSecrets}); returns the release function. */
export function registerSecret(secret: string, set: SecretSet = processSecrets): () => void {
  return set.register(secret);
}
