import { describe, expect, it } from "vitest";
import { AgentMode } from "@byok/wire";
import { toolsFor, TOOL } from "../src/index.js";
import { ctx } from "./tools-fixtures.js";

const names = (c: Parameters<typeof toolsFor>[0]) => toolsFor(c).map((t) => t.name);

const MCP = ["CallMcpTool", "ListMcpResources", "FetchMcpResource"];
const DIRECT = ["mcp__github__create_issue", "mcp__docs__search"];
const AGENT = [
  "Read", "Write", "Edit", "Delete", "Grep", "Glob", "Ls", "ReadLints",
  "Shell", "AwaitShell", "WriteShellStdin", "ForceBackgroundShell",
  "Task", "TodoWrite", "AskQuestion", "SwitchMode", "WebSearch", "WebFetch", ...MCP, ...DIRECT,
];

describe("toolsFor: tools per mode (docs/protocol.md)", () => {
  it("agent and multitask offer the full agent set plus direct MCP tools", () => {
    expect(names(ctx())).toEqual(AGENT);
    expect(names(ctx({ mode: AgentMode.MULTITASK }))).toEqual(AGENT);
    expect(names(ctx({ mode: AgentMode.UNSPECIFIED }))).toEqual(AGENT);
  });

  it("ask is read-only with MCP reads only", () => {
    expect(names(ctx({ mode: AgentMode.ASK }))).toEqual([
      "Read", "Grep", "Glob", "Ls", "ReadLints", "AskQuestion", "WebSearch", "WebFetch", "ListMcpResources", "FetchMcpResource",
    ]);
  });

  it("debug is the agent set without SwitchMode", () => {
    expect(names(ctx({ mode: AgentMode.DEBUG }))).toEqual(AGENT.filter((n) => n !== "SwitchMode"));
  });

  it("plan is read-only + shell family, todos, CreatePlan, Task and MCP; no Write/Edit/Delete", () => {
    const plan = names(ctx({ mode: AgentMode.PLAN }));
    expect(plan).toEqual([
      "Read", "Grep", "Glob", "Ls", "ReadLints", "Shell", "AwaitShell", "WriteShellStdin", "ForceBackgroundShell",
      "Task", "TodoWrite", "AskQuestion", "CreatePlan", "WebSearch", "WebFetch", ...MCP, ...DIRECT,
    ]);
    for (const n of ["Write", "Edit", "Delete", "SwitchMode"]) expect(plan).not.toContain(n);
  });

  it("subagent runs get the agent set without AskQuestion", () => {
    expect(names(ctx({ isSubagent: true }))).toEqual(AGENT.filter((n) => n !== "AskQuestion"));
  });

  it("policy and MCP presence filter the web and MCP tools", () => {
    const n = names(ctx({ webSearchEnabled: false, webFetchEnabled: false, mcpTools: [] }));
    for (const t of ["WebSearch", "WebFetch", ...MCP]) expect(n).not.toContain(t);
    expect(n.some((x) => x.startsWith("mcp__"))).toBe(false);
  });

  it("every schema is a strict object and every description is non-trivial", () => {
    for (const spec of toolsFor(ctx({ mcpTools: [] }))) {
      expect(spec.parameters["type"]).toBe("object");
      expect(spec.parameters["additionalProperties"]).toBe(false);
      expect(spec.description.length).toBeGreaterThan(30);
      expect(spec.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    }
  });

  it("CallMcpTool lists the MCP tools; direct tools keep the server's schema", () => {
    const specs = toolsFor(ctx());
    const call = specs.find((s) => s.name === TOOL.CallMcpTool);
    expect(call?.description).toContain("github / create_issue: Create a GitHub issue.");
    const direct = specs.find((s) => s.name === "mcp__github__create_issue");
    expect(direct?.parameters).toEqual({
      type: "object", properties: { title: { type: "string" }, body: { type: "string" } }, required: ["title"],
    });
    expect(specs.find((s) => s.name === "mcp__docs__search")?.parameters).toEqual({ type: "object", properties: {} });
  });

  it("is deterministic", () => {
    expect(toolsFor(ctx())).toEqual(toolsFor(ctx()));
  });
});
