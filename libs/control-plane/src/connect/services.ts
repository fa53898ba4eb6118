/**
 * The aiserver.v1 control-plane procedures a Cursor client calls around the agent protocol
 * (docs/control-plane.md "Procedures"), answered per tenant. The edge authenticates each like
 * the agent calls, before reading its body; the procedure answers from the tenant's catalogue
 * and policy and the process configuration.
 */
import { create, type DescMethodUnary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { ConnectError, type ConnectRouter, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { ControlPlaneConfig } from "@byok/config";
import type { GatewayMetrics } from "@byok/telemetry";
import { aiserver } from "@byok/wire";
import {
  availableModelsResponse, defaultModelForCliResponse, defaultModelNudgeResponse, defaultModelResponse, usableModelsResponse,
} from "../catalogue/aiserver.js";
import { listedModels, type TenantCatalogue } from "../catalogue/catalogue.js";
import type { PrincipalLike } from "../tokens/authenticator.js";

export interface ControlPlaneServiceDeps {
  config: ControlPlaneConfig;
  metrics: GatewayMetrics;
  /** The call's principal, authenticated by the edge before the body was read (the edge's `principalOf`). */
  principal(ctx: HandlerContext): Promise<PrincipalLike>;
  catalogue(tenantId: string): Promise<TenantCatalogue>;
}

const HTTP2: Record<ControlPlaneConfig["agentTransport"], aiserver.Http2Config> = {
  http2: aiserver.Http2Config.FORCE_ALL_ENABLED,
  http1: aiserver.Http2Config.FORCE_ALL_DISABLED,
  client: aiserver.Http2Config.UNSPECIFIED,
};

/** Registers every served control-plane procedure on the edge's router (each behind its input guard). */
export function registerControlPlaneProcedures(router: ConnectRouter, deps: ControlPlaneServiceDeps): void {
  const s = controlPlaneServices(deps);
  const count = (service: { typeName: string }, impl: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(impl).map(([name, fn]) => [name, counted(deps.metrics, `${service.typeName.replace(/^aiserver\.v1\./, "")}/${name[0]!.toUpperCase()}${name.slice(1)}`, fn as Unary)]),
    );
  router.service(aiserver.AiService, count(aiserver.AiService, s.ai));
  router.service(aiserver.AnalyticsService, count(aiserver.AnalyticsService, s.analytics));
  router.service(aiserver.DashboardService, count(aiserver.DashboardService, s.dashboard));
  router.service(aiserver.ServerConfigService, count(aiserver.ServerConfigService, s.serverConfig));
  // Clients also call GetServerConfig as AiService/GetServerConfig; the schema has that route
  // only under ServerConfigService (observed_route_only), so the same method is served there too.
  const m = aiserver.ServerConfigService.method.getServerConfig;
  const asAiService: DescMethodUnary<typeof aiserver.GetServerConfigRequestSchema, typeof aiserver.GetServerConfigResponseSchema> = {
    ...m,
    parent: { ...m.parent, typeName: "aiserver.v1.AiService", name: "AiService" },
  };
  router.rpc(asAiService, counted(deps.metrics, "AiService/GetServerConfig", s.serverConfig.getServerConfig as Unary) as never);
}

type Unary = (req: MessageShape<DescMessage>, ctx: HandlerContext) => Promise<MessageShape<DescMessage>>;

/** Counts each call by procedure and Connect code. */
function counted(metrics: GatewayMetrics, procedure: string, fn: Unary): Unary {
  return async (req, ctx) => {
    try {
      const out = await fn(req, ctx);
      metrics.controlPlaneCalls.inc({ procedure, code: "ok" });
      return out;
    } catch (err) {
      metrics.controlPlaneCalls.inc({ procedure, code: codeToString(ConnectError.from(err).code) });
      throw err;
    }
  };
}

function controlPlaneServices(deps: ControlPlaneServiceDeps) {
  const tenantOf = async (ctx: HandlerContext) => deps.catalogue((await deps.principal(ctx)).tenantId);

  const serverConfig = async (ctx: HandlerContext): Promise<aiserver.GetServerConfigResponse> => {
    await deps.principal(ctx);
    const url = deps.config.agentUrl;
    return create(aiserver.GetServerConfigResponseSchema, {
      configVersion: "cursor-byok-gateway/1",
      http2Config: HTTP2[deps.config.agentTransport],
      ...(url ? { agentUrlConfig: create(aiserver.AgentUrlConfigSchema, { agentUrl: url, agentnUrl: url }) } : {}),
      // Client telemetry goes nowhere the tenant did not configure: tracing off.
      traceConfig: create(aiserver.TraceConfigSchema, { enabled: false }),
    });
  };

  const ai: Partial<ServiceImpl<typeof aiserver.AiService>> = {
    async serverTime(_req, ctx) {
      const receive = Date.now();
      await deps.principal(ctx);
      return create(aiserver.ServerTimeResponseSchema, { receiveTimestamp: receive, transmitTimestamp: Date.now() });
    },
    async availableModels(req, ctx) {
      const c = await tenantOf(ctx);
      return availableModelsResponse(c, req);
    },
    async getUsableModels(req, ctx) {
      const c = await tenantOf(ctx);
      return usableModelsResponse(c, req);
    },
    async getDefaultModel(_req, ctx) {
      const c = await tenantOf(ctx);
      return defaultModelResponse(c);
    },
    async getDefaultModelForCli(_req, ctx) {
      const c = await tenantOf(ctx);
      return defaultModelForCliResponse(c);
    },
    async getDefaultModelNudgeData(_req, ctx) {
      const c = await tenantOf(ctx);
      return defaultModelNudgeResponse(c);
    },
  };

  const analytics: Partial<ServiceImpl<typeof aiserver.AnalyticsService>> = {
    async trackEvents(req, ctx) {
      await deps.principal(ctx);
      // Counted, never stored: event names and data are the client's business.
      deps.metrics.analyticsEvents.inc(req.events.length);
      return create(aiserver.TrackEventsResponseSchema, {});
    },
    async bootstrapStatsig(_req, ctx) {
      await deps.principal(ctx);
      return create(aiserver.BootstrapStatsigResponseSchema, { generatedAtMs: BigInt(Date.now()) });
    },
  };

  const dashboard: Partial<ServiceImpl<typeof aiserver.DashboardService>> = {
    async getUserPrivacyMode(req, ctx) {
      const c = await tenantOf(ctx);
      // An enforcing tenant answers no-storage, enforced; otherwise the client's own setting stands.
      return create(
        aiserver.GetUserPrivacyModeResponseSchema,
        c.privacyEnforced
          ? { privacyMode: aiserver.PrivacyMode.NO_STORAGE, isEnforcedByTeam: true }
          : { privacyMode: req.inferredPrivacyMode, isEnforcedByTeam: false },
      );
    },
    async getTeamAdminSettingsOrEmptyIfNotInTeam(_req, ctx) {
      const c = await tenantOf(ctx);
      return create(aiserver.GetTeamAdminSettingsResponseSchema, { allowedModels: listedModels(c).map((m) => m.id) });
    },
    async getTeamReposOrEmptyIfNotInTeam(_req, ctx) {
      await deps.principal(ctx);
      return create(aiserver.GetTeamReposResponseSchema, {});
    },
  };

  const serverConfigService: Partial<ServiceImpl<typeof aiserver.ServerConfigService>> = {
    async getServerConfig(_req, ctx) {
      return serverConfig(ctx);
    },
  };

  return { ai, analytics, dashboard, serverConfig: serverConfigService };
}
