// The admin service: the admin API (@byok/admin-api) as its own process, and the CLI.
export { openAdminStore, startAdminService, type AdminService, type AdminServiceOptions } from "./service.js";
