import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AgentMode, ExecClientMessageSchema, InteractionResponseSchema } from "@byok/wire";
import {
  completeExec, completeInteraction, completeWebSearch, planToolCall, type InteractionCompletion, type InteractionResult, type ToolOutcome,
} from "../src/index.js";
import { asInteraction, call, ctx } from "./tools-fixtures.js";

type ResponseInit = MessageInitShape<typeof InteractionResponseSchema>["result"];
const response = (r: ResponseInit): InteractionResult => create(InteractionResponseSchema, { id: 1, result: r }).result;

function outcomeOf(c: InteractionCompletion): ToolOutcome {
  if (c.kind !== "outcome") throw new Error(`expected outcome, got ${c.kind}`);
  return c.outcome;
}

const ask = () => asInteraction(planToolCall(call("AskQuestion", {
  questions: [{ id: "q1", prompt: "Which DB?", options: [{ id: "pg", label: "Postgres" }, { id: "my", label: "MySQL" }] }],
}), ctx()));

describe("completeInteraction", () => {
  it("ask question: answers become model text with labels", () => {
    const o = outcomeOf(completeInteraction(ask(), response({
      case: "askQuestionInteractionResponse",
      value: { result: { result: { case: "success", value: { answers: [{ questionId: "q1", selectedOptionIds: ["pg"], freeformText: "v16" }] } } } },
    })));
    expect(o).toMatchObject({ isError: false, modelText: 'The user answered:\n- Which DB?: "Postgres", "v16" (free text)' });
    const t = o.completed.tool;
    expect(t.case === "askQuestionToolCall" && t.value.result?.result.case).toBe("success");
  });

  it("ask question: async and rejected", () => {
    expect(outcomeOf(completeInteraction(ask(), response({ case: "askQuestionInteractionResponse", value: { result: { result: { case: "async", value: {} } } } }))).modelText)
      .toContain("answers will arrive later");
    expect(outcomeOf(completeInteraction(ask(), response({ case: "askQuestionInteractionResponse", value: { result: { result: { case: "rejected", value: { reason: "busy" } } } } }))).isError)
      .toBe(true);
  });

  it("a response of another branch is a mismatch, not an answer", () => {
    const c = completeInteraction(ask(), response({ case: "switchModeRequestResponse", value: { result: { case: "approved", value: {} } } }));
    expect(c).toMatchObject({ kind: "mismatch", mismatch: true });
    if (c.kind === "mismatch") expect(c.message).toContain("does not answer askQuestionInteractionQuery");
    expect(completeInteraction(ask(), response({ case: undefined })).kind).toBe("mismatch");
  });

  it("create plan: success stores the plan; error is a tool error", () => {
    const p = asInteraction(planToolCall(call("CreatePlan", { name: "P", overview: "O", plan: "# Steps" }), ctx({ mode: AgentMode.PLAN })));
    const o = outcomeOf(completeInteraction(p, response({ case: "createPlanRequestResponse", value: { result: { planUri: "file:///p.md", result: { case: "success", value: {} } } } })));
    expect(o.isError).toBe(false);
    expect(o.effects?.plan).toEqual({ name: "P", overview: "O", plan: "# Steps", uri: "file:///p.md" });
    expect(o.completed.tool.case).toBe("createPlanToolCall");
    const e = outcomeOf(completeInteraction(p, response({ case: "createPlanRequestResponse", value: { result: { result: { case: "error", value: { error: "disk" } } } } })));
    expect(e).toMatchObject({ isError: true, modelText: "The plan could not be created: disk" });
  });

  it("switch mode: approval changes the mode; rejection keeps it", () => {
    const p = asInteraction(planToolCall(call("SwitchMode", { target_mode_id: "plan" }), ctx()));
    const ok = outcomeOf(completeInteraction(p, response({ case: "switchModeRequestResponse", value: { result: { case: "approved", value: {} } } })));
    expect(ok.effects?.mode).toBe(AgentMode.PLAN);
    const t = ok.completed.tool;
    if (t.case !== "switchModeToolCall" || t.value.result?.result.case !== "success") throw new Error("expected success");
    expect(t.value.result.result.value).toMatchObject({ fromModeId: "agent", toModeId: "plan" });
    const no = outcomeOf(completeInteraction(p, response({ case: "switchModeRequestResponse", value: { result: { case: "rejected", value: { reason: "stay" } } } })));
    expect(no).toMatchObject({ isError: true });
    expect(no.effects).toBeUndefined();
    expect(planToolCall(call("SwitchMode", { target_mode_id: "agent" }), ctx()).kind).toBe("refused");
  });

  it("web fetch: approval → fetch_args exec, whose result renders as web_fetch_tool_call", () => {
    const p = asInteraction(planToolCall(call("WebFetch", { url: "https://example.com/" }), ctx()));
    const c = completeInteraction(p, response({ case: "webFetchRequestResponse", value: { result: { case: "approved", value: {} } } }));
    if (c.kind !== "exec") throw new Error(c.kind);
    expect(c.plan.exec).toMatchObject({ case: "fetchArgs", value: { url: "https://example.com/", toolCallId: "call-1" } });
    const fetched = create(ExecClientMessageSchema, {
      message: { case: "fetchResult", value: { result: { case: "success", value: { url: "https://example.com/", content: "# Example", statusCode: 200, contentType: "text/html" } } } },
    });
    const o = completeExec(c.plan, fetched.message);
    expect(o.modelText).toBe("https://example.com/ (HTTP 200, text/html)\n\n# Example");
    const t = o.completed.tool;
    if (t.case !== "webFetchToolCall" || t.value.result?.result.case !== "success") throw new Error("expected web fetch success");
    expect(t.value.result.result.value.markdown).toBe("# Example");
    const rejected = outcomeOf(completeInteraction(p, response({ case: "webFetchRequestResponse", value: { result: { case: "rejected", value: { reason: "no" } } } })));
    expect(rejected.isError).toBe(true);
  });

  it("web search: approval hands over to the search backend; hits render for model and UI", () => {
    const p = asInteraction(planToolCall(call("WebSearch", { search_term: "protobuf-es create" }), ctx()));
    const c = completeInteraction(p, response({ case: "webSearchRequestResponse", value: { result: { case: "approved", value: {} } } }));
    expect(c).toMatchObject({ kind: "web_search", args: { searchTerm: "protobuf-es create", toolCallId: "call-1" } });
    const o = completeWebSearch(p, { hits: [{ title: "Docs", url: "https://buf.build", snippet: "create()  makes\nmessages" }] });
    expect(o.modelText).toBe("1. Docs\n   https://buf.build\n   create() makes messages");
    const t = o.completed.tool;
    expect(t.case === "webSearchToolCall" && t.value.result?.result.case).toBe("success");
    expect(completeWebSearch(p, { error: "backend down" })).toMatchObject({ isError: true, modelText: "Web search failed: backend down" });
    const no = outcomeOf(completeInteraction(p, response({ case: "webSearchRequestResponse", value: { result: { case: "rejected", value: {} } } })));
    expect(no.modelText).toBe("The user declined the web search.");
  });
});
