/** One sample of a Prometheus text exposition. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped; label values unescaped). */
export function parsePrometheus(text: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");
    }
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples named `name` whose labels include every pair of `labels`. */
export function metricSum(samples: MetricSample[], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

/** GET `<baseUrl>/metrics`, parsed. */
export async function scrapeMetrics(baseUrl: string): Promise<MetricSample[]> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET ${baseUrl}/metrics answered ${res.status}`);
  return parsePrometheus(await res.text());
}

/**
 * What moved between two scrapes: `delta(name, labels)` is the difference of `metricSum`
 * (for histograms, pass `name_count` or `name_sum`).
 */
export function metricDelta(before: MetricSample[], after: MetricSample[]): (name: string, labels?: Record<string, string>) => number {
  return (name, labels = {}) => metricSum(after, name, labels) - metricSum(before, name, labels);
}
