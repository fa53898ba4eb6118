// The admin service: the admin API (@byok/admin-api) as its own process, and the CLI.
export { openAdminStore, startAdminServer, type AdminServer, type AdminServerOptions } from "./service.js";
export { ADMIN_ENV_NAMES, loadAdminConfig, type AdminConfig } from "./config.js";
