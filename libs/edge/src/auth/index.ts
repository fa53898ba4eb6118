// Gateway authentication modes (issue 6): API key, trusted header, open (embedded only).
export { createApiKeyAuthenticator, presentedKey, API_KEY_HEADER, type ApiKeyVerifier, type ApiKeyAuthenticator } from "./api-key.js";
export { createTrustedHeaderAuthenticator, TRUSTED_HEADERS, type TrustedHeaderOptions } from "./trusted-header.js";
export { createAuthenticator, isLoopback, AuthConfigError, type AuthMode, type AuthSelection } from "./select.js";
export { unauthenticated } from "./unauthenticated.js";
export type { GatewayPrincipal } from "./principal.js";
export { authenticatorFromConfig, type AuthBackends } from "./from-config.js";
