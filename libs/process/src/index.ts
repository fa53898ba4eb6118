// @byok/process: what every gateway process does the same way: open the store (and its KEK)
// and the Redis bus, listen (the one listen, for the probe-only servers and the edge's port
// alike), answer the probe routes. Kept apart from @byok/runtime: the admin service and the
// migrate job need none of the engine, the provider SDKs or BullMQ.
export { kekFor, openGatewayStore } from "./store.js";
export { openRedisBus } from "./bus.js";
export { closeServer, listen } from "./listen.js";
export { createProbeRoutes, type ProbeDeps } from "./probes.js";
export { listenEdge, type EdgeListener, type EdgeListenOptions } from "./edge-listener.js";
export { exitIfStopStalls } from "./shutdown.js";
