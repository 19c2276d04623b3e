# Knowledge Repository Service — self-hosted image (Node adapter, libSQL file, git repositories on disk).
FROM node:20-slim

ENV NODE_ENV=production \
    SERVICE_DATA_ROOT=/data \
    PORT=8080

WORKDIR /app

# Dependencies first, for layer caching.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY server.ts tsconfig.json ./
COPY lib ./lib
COPY functions ./functions
COPY schema ./schema
COPY admin ./admin
# The admin command's terminal-safe output is the client's (client/output.ts); the client package the server
# hands out (GET /client/kr.tgz) is built from cli/, client/ and mcp/.
COPY client ./client
COPY cli ./cli
COPY mcp ./mcp
COPY scripts/bundle.mjs scripts/client-package.mjs scripts/server-loader.mjs ./scripts/
# What `npm start` does when the bundle is stale (scripts/bundle.mjs): bundle the TypeScript sources and their
# dependencies but the native database driver with esbuild (a runtime dependency) into dist/server.cjs, run by
# dist/server.mjs through V8's code cache, which is written here (dist/ is read-only to the server), with the node
# flags of the CMD below (V8 rejects a cache made under other flags).
# The admin command is bundled too: `docker exec <container> node dist/admin.mjs user list`; and the client
# package (dist/client/: kr.tgz, kr.mjs), which GET /client/kr.tgz serves.
RUN npm run --silent build:server && node dist/server.mjs --write-code-cache && npm run --silent build:admin && npm run --silent build:client

RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node

EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# What `npm start` runs once the bundle is fresh (scripts/start.mjs imports it), with the same node flags (package.json's
# start script, none today), run directly so that SIGTERM reaches the server (npm does not forward it), which then
# finishes in-flight requests and closes the database.
CMD ["node", "dist/server.mjs"]
