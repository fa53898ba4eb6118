// @byok/process: what every gateway process does the same way: open the store (and its KEK)
// and the Redis bus, listen, answer the probe routes. Kept apart from @byok/runtime so the ingress does not load
// the engine and the provider SDKs.
export { kekFor, openGatewayStore } from "./store.js";
export { openRedisBus } from "./bus.js";
export { closeServer, listen } from "./listen.js";
export { createProbeRoutes, type ProbeDeps } from "./probes.js";
export { listenEdge, type EdgeListener, type EdgeListenOptions } from "./edge-listener.js";
