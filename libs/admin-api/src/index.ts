// @byok/admin-api: the operator API (mounted under /admin by the embedded gateway, served on its
// own by services/admin) and its typed client.
export { createAdminHandler, type AdminApiOptions, type AdminHandler } from "./api.js";
export { createAdminClient, type AdminClient } from "./client.js";
