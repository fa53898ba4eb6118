import type { ReasoningEffort } from "@byok/protocol";

/** OpenAI's `reasoning_effort` / `reasoning.effort` levels in the gateway's effort scale. */
export function chatEffort(e: "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | null | undefined): ReasoningEffort | undefined {
  switch (e) {
    case undefined:
    case null:
      return undefined;
    case "none":
      return "disabled";
    case "minimal":
      return "low";
    default:
      return e;
  }
}
