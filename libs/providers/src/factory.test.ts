import { describe, expect, it } from "vitest";
import { createProviderAdapter } from "./factory.js";
import type { ProviderKind } from "@byok/protocol";

describe("createProviderAdapter", () => {
  it("returns an adapter of each kind", () => {
    for (const kind of ["openai-chat", "openai-responses", "anthropic", "azure-openai", "bedrock-anthropic"] as ProviderKind[]) {
      expect(createProviderAdapter(kind).kind).toBe(kind);
    }
  });
});
