import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AskQuestionToolCallSchema, CreatePlanToolCallSchema, FetchArgsSchema, SwitchModeToolCallSchema,
  WebFetchToolCallSchema, WebSearchToolCallSchema, type AskQuestionArgs, type AskQuestionResult,
} from "@byok/wire";
import { MAX_LIST_ENTRIES } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import { SWITCH_MODE_TARGETS } from "./plan-agentic.js";
import type { SwitchModeToolInput } from "./specs.js";
import type { InteractionCompletion, InteractionPlan, InteractionRequest, InteractionResult, ToolOutcome } from "./types.js";

/** The `interaction_response.result` branch that answers each query branch. */
const ANSWERS: Readonly<Record<string, NonNullable<InteractionResult["case"]>>> = {
  askQuestionInteractionQuery: "askQuestionInteractionResponse",
  createPlanRequestQuery: "createPlanRequestResponse",
  switchModeRequestQuery: "switchModeRequestResponse",
  webSearchRequestQuery: "webSearchRequestResponse",
  webFetchRequestQuery: "webFetchRequestResponse",
};

/** The response branch that answers `query` (undefined for queries the tool layer never sends). */
export function expectedResponseCase(query: InteractionRequest): InteractionResult["case"] {
  return ANSWERS[query.case];
}

/**
 * Completes an interaction. A response whose branch does not answer the query is a
 * `mismatch` (docs/protocol.md: an error, not an answer): the engine decides whether to keep
 * waiting or fail the call (e.g. `toolErrorOutcome(plan, message)`).
 * Approved WebFetch → `exec` (send `fetch_args`); approved WebSearch → `web_search` (run the backend).
 */
export function completeInteraction(plan: InteractionPlan, response: InteractionResult): InteractionCompletion {
  const q = plan.query;
  const want = expectedResponseCase(q);
  if (response.case === undefined || response.case !== want) {
    return {
      kind: "mismatch", mismatch: true,
      message: `interaction response ${response.case ?? "(empty)"} does not answer ${q.case} (expected ${want ?? "nothing"})`,
    };
  }
  const done = (o: ToolOutcome): InteractionCompletion => ({ kind: "outcome", outcome: o });
  if (q.case === "askQuestionInteractionQuery" && response.case === "askQuestionInteractionResponse") {
    return done(askQuestionOutcome(plan, q.value.args, response.value.result));
  }
  if (q.case === "createPlanRequestQuery" && response.case === "createPlanRequestResponse") {
    const args = q.value.args;
    const r = response.value.result;
    const completed = toolCall(plan.callId, { case: "createPlanToolCall", value: create(CreatePlanToolCallSchema, { args, result: r }) });
    if (r?.result.case === "success" || (r && r.result.case === undefined && r.planUri)) {
      const plan_ = { name: args?.name ?? "", overview: args?.overview ?? "", plan: args?.plan ?? "", uri: r.planUri };
      return done(outcome(`The plan was presented to the user${r.planUri ? ` (${r.planUri})` : ""}. Stop here and wait for the user to review it; do not start implementing.`, false, completed, { plan: plan_ }));
    }
    const error = r?.result.case === "error" ? r.result.value.error : "the client returned no result";
    return done(outcome(`The plan could not be created: ${error}`, true, completed));
  }
  if (q.case === "switchModeRequestQuery" && response.case === "switchModeRequestResponse") {
    const args = q.value.args;
    const target = args?.targetModeId ?? "";
    const r = response.value.result;
    type Result = MessageInitShape<typeof SwitchModeToolCallSchema>["result"];
    const completedWith = (result: Result) => toolCall(plan.callId, { case: "switchModeToolCall", value: create(SwitchModeToolCallSchema, { args, result }) });
    if (r.case === "approved") {
      const mode = SWITCH_MODE_TARGETS[target as SwitchModeToolInput["target_mode_id"]];
      const completed = completedWith({ result: { case: "success", value: { fromModeId: plan.fromMode ?? "", toModeId: target } } });
      return done(outcome(`The user approved: the conversation is now in ${target} mode. Continue with the tools of that mode.`, false, completed, mode !== undefined ? { mode } : undefined));
    }
    const reason = r.case === "rejected" ? r.value.reason : "";
    return done(outcome(`The user declined switching to ${target} mode${reason ? `: ${reason}` : "."} Continue in the current mode.`, true,
      completedWith({ result: { case: "rejected", value: { reason } } })));
  }
  if (q.case === "webSearchRequestQuery" && response.case === "webSearchRequestResponse") {
    const args = q.value.args;
    const r = response.value.result;
    if (r.case === "approved" && args) return { kind: "web_search", args };
    const reason = r.case === "rejected" ? r.value.reason : "";
    return done(outcome(`The user declined the web search${reason ? `: ${reason}` : "."}`, true, toolCall(plan.callId, {
      case: "webSearchToolCall", value: create(WebSearchToolCallSchema, { args, result: { result: { case: "rejected", value: { reason } } } }),
    })));
  }
  if (q.case === "webFetchRequestQuery" && response.case === "webFetchRequestResponse") {
    const args = q.value.args;
    const r = response.value.result;
    if (r.case === "approved" && args) {
      return {
        kind: "exec",
        plan: {
          kind: "exec", callId: plan.callId, toolName: plan.toolName, streaming: false, started: plan.started,
          exec: { case: "fetchArgs", value: create(FetchArgsSchema, { url: args.url, toolCallId: plan.callId }) },
        },
      };
    }
    const reason = r.case === "rejected" ? r.value.reason : "";
    return done(outcome(`The user declined fetching ${args?.url ?? "the URL"}${reason ? `: ${reason}` : "."}`, true, toolCall(plan.callId, {
      case: "webFetchToolCall", value: create(WebFetchToolCallSchema, { args, result: { result: { case: "rejected", value: { reason } } } }),
    })));
  }
  return { kind: "mismatch", mismatch: true, message: `unsupported interaction ${q.case}` };
}

function askQuestionOutcome(plan: InteractionPlan, args: AskQuestionArgs | undefined, result: AskQuestionResult | undefined): ToolOutcome {
  const completed = toolCall(plan.callId, { case: "askQuestionToolCall", value: create(AskQuestionToolCallSchema, { args, result }) });
  const r = result?.result;
  switch (r?.case) {
    case "success": {
      const lines = r.value.answers.map((a) => {
        const q = args?.questions.find((x) => x.id === a.questionId);
        const labels = a.selectedOptionIds.map((id) => q?.options.find((o) => o.id === id)?.label ?? id);
        const parts = [...labels.map((l) => JSON.stringify(l)), ...(a.freeformText ? [`"${a.freeformText}" (free text)`] : [])];
        return `- ${q?.prompt ?? a.questionId}: ${parts.length > 0 ? parts.join(", ") : "(no answer)"}`;
      });
      return outcome(lines.length > 0 ? `The user answered:\n${lines.join("\n")}` : "The user submitted no answers.", false, completed);
    }
    case "async":
      return outcome("The questions were shown to the user; the answers will arrive later as a new message. Continue with what does not depend on them, or end your turn.", false, completed);
    case "rejected":
      return outcome(`The user declined to answer${r.value.reason ? `: ${r.value.reason}` : "."} Proceed with your best judgement and state your assumptions.`, true, completed);
    case "error":
      return outcome(`The questions could not be shown: ${r.value.errorMessage}`, true, completed);
    default:
      return outcome("The client returned no answer to the questions.", true, completed);
  }
}

/** One search hit of the gateway's search backend. */
export interface WebSearchHit { title: string; url: string; snippet: string }

/** Completes an approved WebSearch with the search backend's hits, or its error. */
export function completeWebSearch(plan: InteractionPlan, result: { hits: readonly WebSearchHit[] } | { error: string }): ToolOutcome {
  const args = plan.query.case === "webSearchRequestQuery" ? plan.query.value.args : undefined;
  if ("error" in result) {
    return outcome(`Web search failed: ${result.error}`, true, toolCall(plan.callId, {
      case: "webSearchToolCall", value: create(WebSearchToolCallSchema, { args, result: { result: { case: "error", value: { error: result.error } } } }),
    }));
  }
  const hits = result.hits.slice(0, MAX_LIST_ENTRIES);
  const completed = toolCall(plan.callId, {
    case: "webSearchToolCall",
    value: create(WebSearchToolCallSchema, {
      args,
      result: { result: { case: "success", value: { references: hits.map((h) => ({ title: h.title, url: h.url, chunk: h.snippet })) } } },
    }),
  });
  if (hits.length === 0) return outcome(`No web results for ${JSON.stringify(args?.searchTerm ?? "")}.`, false, completed);
  const text = hits.map((h, i) => `${i + 1}. ${h.title}\n   ${h.url}${h.snippet ? `\n   ${h.snippet.replace(/\s+/g, " ").trim()}` : ""}`).join("\n");
  return outcome(text, false, completed);
}
