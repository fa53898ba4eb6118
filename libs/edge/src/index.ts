// @byok/edge: the Connect edge every front process serves (BidiAppend, RunSSE) and its
// gateway authentication. Mounted by services/ingress (distributed) and services/gateway (embedded).
export { createConnectionRefusal, createEdgeHandler, RUN_SSE_PATH, BIDI_APPEND_PATH, type EdgeDeps, type EdgeExtension, type NodeHandler } from "./server.js";
export { createOpenAuthenticator, type Authenticator, type Principal } from "./auth.js";
export { readClientHeaders, type ClientHeaders } from "./client-headers.js";
export * from "./auth/index.js";
export { OpenStreams } from "./open-streams.js";
export { RUN_PATH } from "./run.js";
