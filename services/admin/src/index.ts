// @byok/admin: the operator API (mountable in the embedded gateway) and its server.
export { createAdminHandler, type AdminApiOptions, type AdminHandler } from "./api.js";
export { startAdminServer, type AdminServer } from "./server.js";
export { ADMIN_ENV_NAMES, loadAdminConfig, type AdminConfig } from "./config.js";
export { createAdminClient, type AdminClient } from "./client.js";
