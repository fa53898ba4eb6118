import { create } from "@bufbuild/protobuf";
import { TodoItemSchema, TodoStatus, UpdateTodosToolCallSchema, type TodoItem } from "@byok/wire";
import { outcome, toolCall } from "./outcome.js";
import type { TodoStatusName, TodoWriteToolInput } from "./specs.js";
import type { LocalPlan, ToolContext } from "./types.js";

/**
 * TodoWrite is resolved by the server: the new list is computed from the conversation's todos
 * (`ctx.todos`) and returned in `outcome.effects.todos` for the checkpoint. Merge keeps the
 * order of the existing list, updates items by id, and appends new ids in the given order;
 * replace takes the given list as is. `created_at` of an existing item is kept.
 */
export const TODO_STATUS: Readonly<Record<TodoStatusName, TodoStatus>> = {
  pending: TodoStatus.PENDING,
  in_progress: TodoStatus.IN_PROGRESS,
  completed: TodoStatus.COMPLETED,
  cancelled: TodoStatus.CANCELLED,
};

const STATUS_LABEL: Readonly<Record<number, string>> = {
  [TodoStatus.PENDING]: "pending",
  [TodoStatus.IN_PROGRESS]: "in_progress",
  [TodoStatus.COMPLETED]: "completed",
  [TodoStatus.CANCELLED]: "cancelled",
};

export function mergeTodos(existing: readonly TodoItem[], input: TodoWriteToolInput, nowMs: number): TodoItem[] {
  const now = BigInt(Math.max(0, Math.floor(nowMs)));
  const byId = new Map(existing.map((t) => [t.id, t]));
  const fresh = input.todos.map((t) => {
    const old = byId.get(t.id);
    return create(TodoItemSchema, {
      id: t.id,
      content: t.content,
      status: TODO_STATUS[t.status],
      createdAt: old?.createdAt ?? now,
      updatedAt: now,
      dependencies: old?.dependencies ?? [],
    });
  });
  if (!input.merge) return fresh;
  const updates = new Map(fresh.map((t) => [t.id, t]));
  const merged = existing.map((t) => updates.get(t.id) ?? t);
  const known = new Set(existing.map((t) => t.id));
  return [...merged, ...fresh.filter((t) => !known.has(t.id))];
}

export function renderTodos(todos: readonly TodoItem[]): string {
  if (todos.length === 0) return "The todo list is now empty.";
  const lines = todos.map((t) => `- [${STATUS_LABEL[t.status] ?? "pending"}] ${t.id}: ${t.content}`);
  return `Todo list updated (${todos.length} item${todos.length === 1 ? "" : "s"}):\n${lines.join("\n")}`;
}

export function planTodoWrite(callId: string, toolName: string, a: TodoWriteToolInput, ctx: ToolContext): LocalPlan {
  const ids = new Set<string>();
  const dup = a.todos.find((t) => (ids.has(t.id) ? true : (ids.add(t.id), false)));
  const argsTodos = a.todos.map((t) => create(TodoItemSchema, { id: t.id, content: t.content, status: TODO_STATUS[t.status] }));
  const args = { todos: argsTodos, merge: a.merge };
  const started = toolCall(callId, { case: "updateTodosToolCall", value: create(UpdateTodosToolCallSchema, { args }) });
  if (dup) {
    const msg = `Duplicate todo id ${JSON.stringify(dup.id)}: every item needs a unique id. The list was not changed.`;
    const completed = toolCall(callId, {
      case: "updateTodosToolCall",
      value: create(UpdateTodosToolCallSchema, { args, result: { result: { case: "error", value: { error: msg } } } }),
    });
    return { kind: "local", callId, toolName, started, outcome: outcome(msg, true, completed) };
  }
  const todos = mergeTodos(ctx.todos ?? [], a, ctx.nowMs ?? 0);
  const completed = toolCall(callId, {
    case: "updateTodosToolCall",
    value: create(UpdateTodosToolCallSchema, {
      args,
      result: { result: { case: "success", value: { todos, totalCount: todos.length, wasMerge: a.merge } } },
    }),
  });
  return { kind: "local", callId, toolName, started, outcome: outcome(renderTodos(todos), false, completed, { todos }) };
}
