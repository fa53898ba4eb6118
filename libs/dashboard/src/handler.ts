import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { IncomingMessage, ServerResponse } from "node:http";

export const DASHBOARD_PATH = "/dashboard/";

export interface DashboardOptions {
  /** Where the page finds the admin API from the browser, e.g. `/admin` on the embedded gateway, `` on the admin service. */
  adminApiBase: string;
}

/** Serves a request when its path is the dashboard's; returns false for any other path. */
export type DashboardHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

interface Asset {
  type: string;
  body: Buffer;
}

const require = createRequire(import.meta.url);
const own = (name: string) => readFileSync(new URL(`./static/${name}`, import.meta.url));
/** uPlot is served as shipped in its npm package (no bundler): the IIFE build and its stylesheet. */
const vendor = (file: string) => readFileSync(require.resolve(`uplot/dist/${file}`));

/**
 * The page, its script and stylesheet, and uPlot, all read once at start-up. The admin API base
 * is written into the page as a meta tag (escaped), so one page works behind both mounts.
 */
export function createDashboardHandler(opts: DashboardOptions): DashboardHandler {
  const base = opts.adminApiBase.replace(/\/+$/, "");
  const html = own("index.html").toString("utf8").replace("{{ADMIN_API_BASE}}", base.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`));
  const assets = new Map<string, Asset>([
    ["", { type: "text/html; charset=utf-8", body: Buffer.from(html) }],
    ["app.js", { type: "text/javascript; charset=utf-8", body: own("app.js") }],
    ["style.css", { type: "text/css; charset=utf-8", body: own("style.css") }],
    ["vendor/uPlot.iife.min.js", { type: "text/javascript; charset=utf-8", body: vendor("uPlot.iife.min.js") }],
    ["vendor/uPlot.min.css", { type: "text/css; charset=utf-8", body: vendor("uPlot.min.css") }],
  ]);
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    if (path === "/dashboard") {
      res.writeHead(308, { location: DASHBOARD_PATH }).end();
      return true;
    }
    if (!path.startsWith(DASHBOARD_PATH)) return false;
    const asset = assets.get(path.slice(DASHBOARD_PATH.length));
    if (asset === undefined || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(asset === undefined ? 404 : 405, { "content-type": "text/plain" }).end(asset === undefined ? "not found\n" : "method not allowed\n");
      return true;
    }
    res.writeHead(200, {
      "content-type": asset.type,
      "content-length": String(asset.body.length),
      "cache-control": "no-cache",
      // Only its own scripts and styles, and the admin API on the same origin.
      "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
      "x-content-type-options": "nosniff",
    });
    res.end(req.method === "HEAD" ? undefined : asset.body);
    return true;
  };
}
