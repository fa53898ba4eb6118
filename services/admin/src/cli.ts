/**
 * Admin CLI: `npx tsx services/admin/src/cli.ts <command> ...` against the admin API at
 * GATEWAY_ADMIN_URL (default http://127.0.0.1:8081) with GATEWAY_ADMIN_KEY. Prints JSON
 * (CSV for `usage --csv`). Provider secrets are read from environment variables named on
 * the command line, so they never appear in argv or shell history.
 */
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { readFile } from "node:fs/promises";
import { createAdminClient } from "@byok/admin-api";

export const USAGE = `usage: cli.ts <command>
  tenant create <tenantId> --name <name> [--retention full|metadata|none]
  tenant list | tenant get <tenantId>
  tenant set-limits <tenantId> --json '<TenantLimits JSON>'
  tenant set-retention <tenantId> <full|metadata|none>
  tenant set-policy <tenantId> --json '<TenantPolicy JSON: {"defaultModel"?, "privacyMode"?: "user"|"enforced"}>'
  user create <tenantId> <userId> [--email <e>] [--external-id <id>]
  user list <tenantId>
  key create <tenantId> --name <name> [--user <userId>] [--expires <ISO time>] [--scope gateway|usage_read]
  key list <tenantId> | key revoke <tenantId> <keyId>
  route set <tenantId> <modelId> (--targets '<JSON array>' | --file <path.json>) [--catalogue '<RouteCatalogue JSON>']
  route list <tenantId> | route delete <tenantId> <modelId>
  credential set <tenantId> <ref> (--api-key-env <VAR> | --aws-env)   (AWS: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY[, AWS_SESSION_TOKEN])
  credential list <tenantId> | credential delete <tenantId> <ref>
  price set <provider> <model> --input <USD/Mtok> --output <USD/Mtok> [--cache-read <USD/Mtok>] [--cache-write <USD/Mtok>] [--from <ISO time>]
  price list
  usage <tenantId> [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--user <id>] [--model <m>] [--csv]
  audit [--tenant <tenantId>] [--limit <n>]`;

const OPTIONS = {
  name: { type: "string" },
  retention: { type: "string" },
  json: { type: "string" },
  email: { type: "string" },
  "external-id": { type: "string" },
  user: { type: "string" },
  expires: { type: "string" },
  scope: { type: "string" },
  targets: { type: "string" },
  catalogue: { type: "string" },
  file: { type: "string" },
  "api-key-env": { type: "string" },
  "aws-env": { type: "boolean" },
  input: { type: "string" },
  output: { type: "string" },
  "cache-read": { type: "string" },
  "cache-write": { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  model: { type: "string" },
  csv: { type: "boolean" },
  tenant: { type: "string" },
  limit: { type: "string" },
} as const;

class UsageError extends Error {}

/** Runs one command; returns what it printed. Throws UsageError or the API's error. */
export async function runCli(argv: readonly string[], env: Record<string, string | undefined>): Promise<string> {
  const { values: o, positionals: p } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  const key = env.GATEWAY_ADMIN_KEY;
  if (!key) throw new UsageError("GATEWAY_ADMIN_KEY is not set");
  const api = createAdminClient(env.GATEWAY_ADMIN_URL ?? "http://127.0.0.1:8081", key);
  const arg = (i: number, what: string) => {
    const v = p[i];
    if (v === undefined || v === "") throw new UsageError(`missing <${what}>`);
    return v;
  };
  const seg = (i: number, what: string) => encodeURIComponent(arg(i, what));
  const need = (v: string | undefined, flag: string) => {
    if (v === undefined) throw new UsageError(`missing --${flag}`);
    return v;
  };
  const show = (v: unknown) => JSON.stringify(v, null, 2);
  const t = () => `/v1/tenants/${seg(2, "tenantId")}`;

  switch (`${p[0] ?? ""} ${p[1] ?? ""}`.trim()) {
    case "tenant create":
      return show(await api.call("POST", "/v1/tenants", { tenantId: arg(2, "tenantId"), name: need(o.name, "name"), ...(o.retention ? { retention: o.retention } : {}) }));
    case "tenant list":
      return show(await api.call("GET", "/v1/tenants"));
    case "tenant get":
      return show(await api.call("GET", t()));
    case "tenant set-limits":
      return show(await api.call("PATCH", t(), { limits: JSON.parse(need(o.json, "json")) as unknown }));
    case "tenant set-policy":
      return show(await api.call("PATCH", t(), { policy: JSON.parse(need(o.json, "json")) as unknown }));
    case "tenant set-retention":
      return show(await api.call("PATCH", t(), { retention: arg(3, "policy") }));
    case "user create":
      return show(await api.call("POST", `${t()}/users`, { userId: arg(3, "userId"), ...(o.email ? { email: o.email } : {}), ...(o["external-id"] ? { externalId: o["external-id"] } : {}) }));
    case "user list":
      return show(await api.call("GET", `${t()}/users`));
    case "key create":
      return show(
        await api.call("POST", `${t()}/keys`, {
          name: need(o.name, "name"),
          ...(o.user ? { userId: o.user } : {}),
          ...(o.expires ? { expiresAt: o.expires } : {}),
          ...(o.scope ? { scope: o.scope } : {}),
        }),
      );
    case "key list":
      return show(await api.call("GET", `${t()}/keys`));
    case "key revoke":
      return show(await api.call("POST", `${t()}/keys/${seg(3, "keyId")}/revoke`));
    case "route set": {
      const text = o.file !== undefined ? await readFile(o.file, "utf8") : need(o.targets, "targets or --file");
      const catalogue = o.catalogue === undefined ? {} : { catalogue: JSON.parse(o.catalogue) as unknown };
      return show(await api.call("PUT", `${t()}/routes/${seg(3, "modelId")}`, { targets: JSON.parse(text) as unknown, ...catalogue }));
    }
    case "route list":
      return show(await api.call("GET", `${t()}/routes`));
    case "route delete":
      return show(await api.call("DELETE", `${t()}/routes/${seg(3, "modelId")}`));
    case "credential set":
      return show(await api.call("PUT", `${t()}/credentials/${seg(3, "ref")}`, { credential: credentialFromEnv(o["api-key-env"], o["aws-env"] === true, env) }));
    case "credential list":
      return show(await api.call("GET", `${t()}/credentials`));
    case "credential delete":
      return show(await api.call("DELETE", `${t()}/credentials/${seg(3, "ref")}`));
    case "price set":
      return show(
        await api.call("POST", "/v1/prices", {
          provider: arg(2, "provider"),
          model: arg(3, "model"),
          inputPerMTok: usdToMicro(need(o.input, "input")),
          outputPerMTok: usdToMicro(need(o.output, "output")),
          cacheReadPerMTok: usdToMicro(o["cache-read"] ?? "0"),
          cacheWritePerMTok: usdToMicro(o["cache-write"] ?? "0"),
          ...(o.from ? { effectiveFrom: o.from } : {}),
        }),
      );
    case "price list":
      return show(await api.call("GET", "/v1/prices"));
    default:
      break;
  }
  if (p[0] === "usage") {
    const q = new URLSearchParams();
    for (const [name, v] of [["from", o.from], ["to", o.to], ["user", o.user], ["model", o.model]] as const) if (v) q.set(name, v);
    if (o.csv) q.set("format", "csv");
    const path = `/v1/tenants/${seg(1, "tenantId")}/usage${q.size > 0 ? `?${q}` : ""}`;
    return o.csv ? api.text(path) : show(await api.call("GET", path));
  }
  if (p[0] === "audit") {
    const q = new URLSearchParams();
    if (o.tenant) q.set("tenant", o.tenant);
    if (o.limit) q.set("limit", o.limit);
    return show(await api.call("GET", `/v1/audit${q.size > 0 ? `?${q}` : ""}`));
  }
  throw new UsageError(`unknown command: ${p.slice(0, 2).join(" ") || "(none)"}`);
}

/** "3" or "0.075" USD per million tokens → integer micro-USD per million tokens. */
export function usdToMicro(usd: string): number {
  if (!/^\d+(\.\d{1,6})?$/.test(usd)) throw new UsageError(`not a USD amount with at most 6 decimals: ${usd}`);
  const [whole = "0", frac = ""] = usd.split(".");
  return Number(whole) * 1_000_000 + Number(frac.padEnd(6, "0"));
}

function credentialFromEnv(apiKeyEnv: string | undefined, aws: boolean, env: Record<string, string | undefined>): unknown {
  if (apiKeyEnv !== undefined) {
    const apiKey = env[apiKeyEnv];
    if (!apiKey) throw new UsageError(`environment variable ${apiKeyEnv} is empty`);
    return { kind: "api_key", apiKey };
  }
  if (aws) {
    const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = env;
    if (!accessKeyId || !secretAccessKey) throw new UsageError("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set");
    return { kind: "aws", accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
  }
  throw new UsageError("credential set needs --api-key-env <VAR> or --aws-env");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  runCli(process.argv.slice(2), process.env).then(
    (out) => {
      process.stdout.write(out.endsWith("\n") ? out : `${out}\n`);
    },
    (e: unknown) => {
      const usage = e instanceof UsageError || (e instanceof Error && "code" in e && String(e.code).startsWith("ERR_PARSE_ARGS"));
      process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${usage ? `${USAGE}\n` : ""}`);
      process.exit(usage ? 2 : 1);
    },
  );
}
