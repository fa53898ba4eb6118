/**
 * The control-plane half of a Cursor client (docs/control-plane.md "What a client calls"):
 * sign-in with an API key, the model list, and the aiserver.v1 Connect calls, made in the order
 * Cursor's own agent client makes them, with connect-node's real Connect client (binary
 * protobuf, as Cursor sends). Pair with createCursorClient({ authToken: accessToken }) for the
 * agent calls.
 */
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { aiserver } from "@byok/wire";

export interface SignInResult {
  status: number;
  accessToken: string;
  refreshToken: string;
  authId: string;
}

export interface ModelsList {
  object: string;
  data: { id: string; object: string; created: number; owned_by: string }[];
  items: { id: string; displayName: string }[];
}

/** `POST /auth/exchange_user_api_key` with the key (or a refresh token) as Bearer, body `{}`. */
export async function exchangeApiKey(baseUrl: string, bearer: string): Promise<SignInResult & { body: Record<string, unknown> }> {
  const res = await fetch(`${baseUrl}/auth/exchange_user_api_key`, {
    method: "POST",
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: "{}",
  });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body, accessToken: String(body.accessToken ?? ""), refreshToken: String(body.refreshToken ?? ""), authId: String(body.authId ?? "") };
}

/** `GET /v1/models` with the session token. */
export async function listModels(baseUrl: string, token: string): Promise<{ status: number; body: ModelsList }> {
  const res = await fetch(`${baseUrl}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as ModelsList };
}

export interface ControlPlaneClients {
  ai: Client<typeof aiserver.AiService>;
  analytics: Client<typeof aiserver.AnalyticsService>;
  dashboard: Client<typeof aiserver.DashboardService>;
  serverConfig: Client<typeof aiserver.ServerConfigService>;
}

/** Connect clients of the control-plane services, sending `authorization: Bearer <token>` and Cursor's client headers. */
export function controlPlaneClients(baseUrl: string, token: string, opts: { httpVersion?: "1.1" | "2"; clientType?: string } = {}): ControlPlaneClients {
  const headers: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    req.header.set("x-cursor-client-type", opts.clientType ?? "cli");
    req.header.set("x-cursor-client-version", "2.3.41");
    req.header.set("x-ghost-mode", "false");
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl, httpVersion: opts.httpVersion ?? "1.1", useBinaryFormat: true, interceptors: [headers] });
  return {
    ai: createClient(aiserver.AiService, transport),
    analytics: createClient(aiserver.AnalyticsService, transport),
    dashboard: createClient(aiserver.DashboardService, transport),
    serverConfig: createClient(aiserver.ServerConfigService, transport),
  };
}

/** What the calls before the first agent call answered. */
export interface PreRunAnswers {
  signIn: SignInResult;
  models: ModelsList;
  privacyMode: aiserver.GetUserPrivacyModeResponse;
  serverConfig: aiserver.GetServerConfigResponse;
  statsig: aiserver.BootstrapStatsigResponse;
  teamAdmin: aiserver.GetTeamAdminSettingsResponse;
  clients: ControlPlaneClients;
}

/**
 * The agent client's calls before its first run, in the observed order: exchange, /v1/models,
 * GetUserPrivacyMode, GetServerConfig, BootstrapStatsig, GetTeamAdminSettingsOrEmptyIfNotInTeam
 * (each with an empty request, as observed). Throws when one does not answer 200.
 */
export async function signInLikeCursor(baseUrl: string, apiKey: string): Promise<PreRunAnswers> {
  const signIn = await exchangeApiKey(baseUrl, apiKey);
  if (signIn.status !== 200) throw new Error(`exchange_user_api_key answered HTTP ${signIn.status}: ${JSON.stringify(signIn.body)}`);
  const models = await listModels(baseUrl, signIn.accessToken);
  if (models.status !== 200) throw new Error(`/v1/models answered HTTP ${models.status}`);
  const clients = controlPlaneClients(baseUrl, signIn.accessToken);
  const privacyMode = await clients.dashboard.getUserPrivacyMode({});
  const serverConfig = await clients.serverConfig.getServerConfig({});
  const statsig = await clients.analytics.bootstrapStatsig({});
  const teamAdmin = await clients.dashboard.getTeamAdminSettingsOrEmptyIfNotInTeam({});
  return { signIn, models: models.body, privacyMode, serverConfig, statsig, teamAdmin, clients };
}
