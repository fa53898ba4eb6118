// Public surface of @byok/control-plane (issue 11): what Cursor's own clients call around the
// agent protocol — sign-in and session tokens, the per-tenant model catalogue, the aiserver.v1
// control-plane procedures, /v1/traces — mounted by the edge in front of the agent routes.
export { createControlPlane, MODELS_PATH, TRACES_PATH, type ControlPlane, type ControlPlaneDeps } from "./control-plane.js";
export { loadTenantCatalogue, listedModels, modelsListBody, type CatalogueModel, type CatalogueStore, type TenantCatalogue } from "./catalogue/catalogue.js";
export { EFFORT_PARAMETER_ID } from "./catalogue/aiserver.js";
export { tokenKeysFor, TOKEN_KEY_FILE } from "./tokens/keys.js";
export { createTokenService, looksLikeJwt, type TokenService, type TokenSubject, type IssuedTokens, type TokenKind } from "./tokens/tokens.js";
export { withTokens, type HeaderAuthenticator, type PrincipalLike, type KeyStatusSource } from "./tokens/authenticator.js";
export { EXCHANGE_PATH, OAUTH_TOKEN_PATH } from "./http/auth-routes.js";
