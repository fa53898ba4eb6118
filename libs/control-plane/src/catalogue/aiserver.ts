/**
 * The catalogue as aiserver.v1 answers: AvailableModels, GetUsableModels, GetDefaultModel,
 * GetDefaultModelForCli, GetDefaultModelNudgeData. ModelDetails has `api_key` and
 * `openai_api_base_url` fields: they are never set.
 */
import { create } from "@bufbuild/protobuf";
import { aiserver } from "@byok/wire";
import { listedModels, type CatalogueModel, type TenantCatalogue } from "./catalogue.js";

/** The parameter id clients copy back in `RequestedModel.parameters` (docs/control-plane.md). */
export const EFFORT_PARAMETER_ID = "thinking_effort";

const EFFORT_LABEL: Record<string, string> = {
  disabled: "Off",
  low: "Low",
  medium: "Medium",
  high: "High",
  xhigh: "Extra high",
  max: "Max",
};

function availableModel(m: CatalogueModel, isDefault: boolean): aiserver.AvailableModelsResponse_AvailableModel {
  const efforts = m.efforts;
  return create(aiserver.AvailableModelsResponse_AvailableModelSchema, {
    name: m.id,
    defaultOn: true,
    supportsAgent: true,
    supportsPlanMode: true,
    supportsThinking: m.thinking,
    supportsMaxMode: m.maxMode,
    supportsNonMaxMode: true,
    supportsImages: false,
    clientDisplayName: m.displayName,
    serverModelName: m.id,
    inputboxShortModelName: m.displayName,
    idAliases: m.aliases,
    isHidden: m.hidden,
    isUserAdded: false,
    ...(m.contextTokens !== undefined ? { contextTokenLimit: m.contextTokens, contextTokenLimitForMaxMode: m.contextTokens } : {}),
    ...(isDefault ? { isRecommendedForBackgroundComposer: true } : {}),
    parameterDefinitions:
      efforts.length === 0
        ? []
        : [
            create(aiserver.ModelParameterDefinitionSchema, {
              id: EFFORT_PARAMETER_ID,
              name: "Thinking effort",
              parameterType: create(aiserver.ModelParameterDefinition_ModelParameterTypeSchema, {
                enumParameter: create(aiserver.ModelParameterDefinition_EnumParameterDefinitionSchema, {
                  values: efforts.map((e) =>
                    create(aiserver.ModelParameterDefinition_EnumParameterDefinition_EnumParameterValueSchema, { value: e, displayName: EFFORT_LABEL[e] ?? e }),
                  ),
                }),
              }),
            }),
          ],
    variants: efforts.map((e) =>
      create(aiserver.AvailableModelsResponse_ModelVariantConfigSchema, {
        parameterValues: [create(aiserver.RequestedModel_ModelParameterValueSchema, { id: EFFORT_PARAMETER_ID, value: e })],
        displayName: `${m.displayName} (${EFFORT_LABEL[e] ?? e})`,
        isMaxMode: false,
        isDefaultNonMaxConfig: e === (m.defaultEffort ?? efforts[0]),
      }),
    ),
  });
}

export function availableModelsResponse(c: TenantCatalogue, req: aiserver.AvailableModelsRequest): aiserver.AvailableModelsResponse {
  const models = req.includeHiddenModels ? c.models : listedModels(c);
  const def = c.defaultModel?.id ?? "";
  const feature = create(aiserver.AvailableModelsResponse_FeatureModelConfigSchema, { defaultModel: def, fallbackModels: listedModels(c).map((m) => m.id).filter((id) => id !== def) });
  return create(aiserver.AvailableModelsResponseSchema, {
    models: models.map((m) => availableModel(m, m.id === def)),
    modelNames: models.map((m) => m.id),
    useModelParameters: req.useModelParameters ?? false,
    ...(def ? { composerModelConfig: feature, cmdKModelConfig: feature, backgroundComposerModelConfig: feature, planExecutionModelConfig: feature, quickAgentModelConfig: feature } : {}),
  });
}

/** ModelDetails of one model: its name and max mode only (never a key or base URL). */
function modelDetails(m: CatalogueModel): aiserver.ModelDetails {
  return create(aiserver.ModelDetailsSchema, { modelName: m.id, maxMode: false });
}

export function usableModelsResponse(c: TenantCatalogue, req: aiserver.GetUsableModelsRequest): aiserver.GetUsableModelsResponse {
  // custom_model_ids the client added are usable only when the tenant routes them.
  const extra = req.customModelIds.map((id) => c.models.find((m) => m.id === id || m.aliases.includes(id))).filter((m): m is CatalogueModel => m !== undefined && m.hidden);
  return create(aiserver.GetUsableModelsResponseSchema, { models: [...listedModels(c), ...extra].map(modelDetails) });
}

export function defaultModelResponse(c: TenantCatalogue): aiserver.GetDefaultModelResponse {
  const m = c.defaultModel;
  return create(aiserver.GetDefaultModelResponseSchema, {
    model: m?.id ?? "",
    thinkingModel: m?.thinking ? m.id : (listedModels(c).find((x) => x.thinking)?.id ?? ""),
    maxMode: false,
  });
}

export function defaultModelForCliResponse(c: TenantCatalogue): aiserver.GetDefaultModelForCliResponse {
  return create(aiserver.GetDefaultModelForCliResponseSchema, c.defaultModel ? { model: modelDetails(c.defaultModel) } : {});
}

/** No nudges: the initial model of a new chat is the tenant's default. */
export function defaultModelNudgeResponse(c: TenantCatalogue): aiserver.GetDefaultModelNudgeDataResponse {
  const m = c.defaultModel;
  return create(aiserver.GetDefaultModelNudgeDataResponseSchema, {
    shouldDefaultSwitchOnNewChat: false,
    ...(m
      ? {
          initialModel: create(aiserver.GetDefaultModelNudgeDataResponse_InitialModelSchema, {
            modelId: m.id,
            parameters: m.efforts.length > 0 ? [create(aiserver.RequestedModel_ModelParameterValueSchema, { id: EFFORT_PARAMETER_ID, value: m.defaultEffort ?? m.efforts[0] ?? "" })] : [],
          }),
        }
      : {}),
  });
}
