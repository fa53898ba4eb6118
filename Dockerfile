# syntax=docker/dockerfile:1
# One image for every gateway process; the command picks it:
#   docker run IMAGE ingress | worker | admin | gateway | migrate
# docs/operations.md describes how compose and the Helm chart run it.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: install everything, compile src/ → dist/ (npm run build), drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY . .
# After the build, drop what the runtime does not read: sources (dist/ carries source maps),
# tests and tooling.
RUN npm ci --no-audit --no-fund \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf .build bench docs proto tools libs/*/src libs/*/test services/*/src services/*/test \
           libs/*/dist/*.tsbuildinfo services/*/dist/*.tsbuildinfo

# ---- runtime: Node 24 slim, non-root, nothing written outside /data and /tmp ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    GATEWAY_DATA_DIR=/data/pglite
WORKDIR /app
COPY --from=build --chown=0:0 /src /app
# /data: PGlite and the generated KEK of the embedded gateway (mount a volume there); the
# distributed processes write nothing. With a read-only root filesystem mount /tmp as tmpfs.
RUN mkdir -p /data && chown 1000:1000 /data
USER 1000:1000
EXPOSE 8787 8081
# Node runs as PID 1 in-process (bin/byok.mjs imports the chosen main): SIGTERM reaches the
# process's own handler, which drains and exits; no child processes are started.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "bin/healthcheck.mjs"]
ENTRYPOINT ["node", "--conditions=byok-dist", "--enable-source-maps", "--no-experimental-strip-types", "bin/byok.mjs"]
CMD ["gateway"]
