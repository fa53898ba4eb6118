/** The label value that stands for every value past the cap. */
export const OTHER_LABEL = "other";

/**
 * A label value limiter: the first `max` distinct values pass as they are, later new ones become
 * `other`, so a label fed by names the gateway does not choose (model ids, tenants) keeps the
 * number of series bounded. Empty values become `unknown`.
 */
export function boundedLabel(max: number): (value: string) => string {
  const seen = new Set<string>();
  return (value) => {
    if (!value) return "unknown";
    if (seen.has(value)) return value;
    if (seen.size >= max) return OTHER_LABEL;
    seen.add(value);
    return value;
  };
}
