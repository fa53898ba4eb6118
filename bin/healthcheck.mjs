#!/usr/bin/env node
// Docker HEALTHCHECK: exits 0 when this container's process answers GET /healthz on loopback.
// Which process runs is not known here (one image, the command picks it), so the ports every
// process may listen on are tried: GATEWAY_PORT (gateway, ingress, worker; default 8787) and
// GATEWAY_ADMIN_PORT (admin; default 8081). Each container runs one process.
const ports = [process.env.GATEWAY_PORT || "8787", process.env.GATEWAY_ADMIN_PORT || "8081"];
const timeoutMs = Number(process.env.BYOK_HEALTHCHECK_TIMEOUT_MS || 2000);

for (const port of new Set(ports)) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    if (res.ok) process.exit(0);
  } catch {
    // not this port
  }
}
console.error(`healthcheck: no /healthz answered on 127.0.0.1:${[...new Set(ports)].join(", ")}`);
process.exit(1);
