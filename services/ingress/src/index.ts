export { createIngressHandler, RUN_SSE_PATH, BIDI_APPEND_PATH, type IngressDeps, type NodeHandler, type EdgeExtension } from "./server.js";
export { createOpenAuthenticator, type Authenticator, type Principal } from "./auth.js";
export { readClientHeaders, type ClientHeaders } from "./client-headers.js";
export * from "./auth/index.js";
export { OpenStreams } from "./open-streams.js";
