# syntax=docker/dockerfile:1
#
# keygate as a container: one compiled executable on a distroless base.
#   docker build -t keygate .
#   docker run -p 3000:3000 -v keygate-data:/data -e ADMIN_TOKEN=... keygate
# With DATABASE_URL set it uses that PostgreSQL; unset, the embedded PGlite in /data.
#
# Health: the final image has no shell or curl, so it declares no HEALTHCHECK. Probe over
# HTTP from the orchestrator: GET /healthz (liveness: 200 while the process lives) and
# GET /readyz (readiness: 200 while the database answers, else 503).

# --- build: the same install and build as CI. package-lock.json pins bun (1.4.4) as an
# npm dev dependency, so `npm ci` brings the exact bun that compiles the executable.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# A dev dependency of the tests (see its package.json) that npm ci links from the tree,
# and the backend client, a workspace of the root package.json.
COPY tools/openapi-client/package.json tools/openapi-client/
COPY clients/node/package.json clients/node/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && mkdir -p /out/data \
 && cp dist/keygate /out/keygate

# --- run: glibc and CA certificates only (the bun runtime is inside the executable);
# no shell, no package manager. "nonroot" is uid/gid 65532.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/keygate /app/keygate
USER 65532:65532
ENV PORT=3000 \
    DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 3000
# The service finishes in-flight requests and flushes buffered writes on SIGTERM.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/keygate"]
