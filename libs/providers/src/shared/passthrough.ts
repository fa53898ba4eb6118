import type { ProviderTarget, VendorPassthrough } from "@byok/protocol";
import type { AdapterOptions } from "./options.js";

/**
 * The caller's own body for a target that speaks its API (docs/compat.md "Passthrough"): only
 * the route's fields are rewritten. `model` becomes the upstream model; the caller's output cap
 * (any of `capFields` it set) is lowered to the route's; with no cap of its own the route's goes
 * in `defaultCapField`; the route's `extraBody` is merged last, as on a translated body.
 */
export function passthroughBody(
  p: VendorPassthrough,
  target: ProviderTarget,
  opts: AdapterOptions,
  caps: { fields: readonly string[]; defaultField: string },
): Record<string, unknown> {
  const body: Record<string, unknown> = { ...p.body, model: target.model, stream: p.stream };
  const routeCap = target.maxOutputTokens;
  if (routeCap !== undefined) {
    const set = caps.fields.filter((f) => typeof body[f] === "number");
    for (const f of set) body[f] = Math.min(body[f] as number, routeCap);
    if (set.length === 0) body[caps.defaultField] = routeCap;
  }
  return { ...body, ...opts.extraBody };
}

/**
 * A non-streaming passthrough answer fed through the API's stream decoder as the events it
 * stands for, so completion, refusal, usage and error checks are the streamed pass's own. The
 * caller gets the response itself (`onVendorEvent`), not these events.
 */
export async function oneResponse<R extends object, E>(
  p: VendorPassthrough,
  call: () => PromiseLike<R>,
  asEvents: (response: R) => E[],
): Promise<Iterable<readonly E[]>> {
  const response = await call();
  p.onVendorEvent(response as Record<string, unknown>);
  // One batch: the pump reads it like a network chunk of a stream.
  return [asEvents(response)];
}
