/**
 * @byok/dashboard: the usage dashboard page (docs/dashboard.md), served under `/dashboard/`
 * by the admin service and the embedded gateway. The page and its scripts hold no data: they
 * read the admin API's `GET /v1/usage` with the key typed in (the admin key, or a tenant's
 * usage read key, which sees that tenant only).
 */
export { createDashboardHandler, DASHBOARD_PATH, type DashboardHandler, type DashboardOptions } from "./handler.js";
