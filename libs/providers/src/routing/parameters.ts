import type { ModelParameter, ReasoningEffort } from "@byok/protocol";

/** Parameter ids that mean "thinking effort" (docs/protocol.md "Model parameters": `thinking_effort` and common synonyms). */
const EFFORT_IDS = new Set(["thinking_effort", "reasoning_effort", "reasoning", "thinking", "effort"]);

const EFFORT_VALUES: Readonly<Record<string, ReasoningEffort>> = {
  disabled: "disabled",
  off: "disabled",
  none: "disabled",
  false: "disabled",
  minimal: "low",
  low: "low",
  medium: "medium",
  on: "medium",
  true: "medium",
  enabled: "medium",
  high: "high",
  xhigh: "xhigh",
  "extra-high": "xhigh",
  extra_high: "xhigh",
  max: "max",
  maximum: "max",
};

/**
 * The thinking effort the client asked for, or undefined when it sent none (or an unknown
 * value, which is ignored rather than refused). Ids and values are matched
 * case-insensitively; the first recognised effort parameter wins.
 */
export function mapThinkingEffort(parameters: readonly ModelParameter[] | undefined): ReasoningEffort | undefined {
  for (const p of parameters ?? []) {
    if (!EFFORT_IDS.has(p.id.trim().toLowerCase())) continue;
    const effort = EFFORT_VALUES[p.value.trim().toLowerCase()];
    if (effort) return effort;
  }
  return undefined;
}

/** Whether any parameter or the flag asks for max mode (logged; the route may map it to options). */
export function wantsMaxMode(maxMode: boolean | undefined, parameters: readonly ModelParameter[] | undefined): boolean {
  if (maxMode) return true;
  return (parameters ?? []).some((p) => p.id.trim().toLowerCase() === "max_mode" && ["true", "on", "1"].includes(p.value.trim().toLowerCase()));
}
