# syntax=docker/dockerfile:1
# The `svc` image: a small, non-root runtime running `svc serve`.
#
#   docker build -t svc:$(node -p "require('./package.json').version") .
#
# Three stages: `build` compiles TypeScript and builds the browser console (Vite, ui/dist) with the
# dev dependencies, `deps` installs the production dependencies only, `runtime` gets the compiled
# code, the SQL migrations, the built console and the production node_modules, and nothing else. Every RUN step is a plain shell command so CI can
# replay it outside a container (test/image.test.ts does that on every run).
#
# `npm ci` installs exactly the lock (msgpackr-extract is pinned through `overrides` to a version
# published for every platform) and runs no dependency's install script (package.json `allowScripts`).

# Node.js 24 LTS, the release scripts/node.sh pins for the tests (test/image.test.ts checks they agree).
ARG NODE_IMAGE=node:24.22.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY bin ./bin
COPY scripts/build.sh scripts/build-ui.sh scripts/bundle.mjs scripts/bundle-rewrites.mjs ./scripts/
COPY ui ./ui
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY --from=build /src/ui/dist ./ui/dist
COPY --from=build /src/dist ./dist
# `svc` on PATH; a fixed non-root uid/gid (10001) that the Helm chart's securityContext names.
# The application files stay owned by root: the process cannot modify its own code.
RUN chmod 0755 /app/bin/svc.js && ln -s /app/bin/svc.js /usr/local/bin/svc && groupadd --system --gid 10001 svc && useradd --system --uid 10001 --gid svc --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin svc
USER 10001:10001
# 8080: HTTP API (server.port); 8081: data-apps listener (apps.listen, only when apps.origin is set)
EXPOSE 8080 8081
# No curl in the slim image: node's fetch against /healthz on server.port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.SVC_SERVER__PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# svc.toml is read from the working directory (the chart mounts it at /etc/svc and sets
# workingDir there); SVC_<SECTION>__<KEY> variables override it.
ENTRYPOINT ["svc"]
CMD ["serve"]
