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
# What `npm start`'s prestart step does: bundle the TypeScript entry with esbuild (a runtime dependency).
# The admin command is bundled the same way: `docker exec <container> node dist/admin.mjs user list`.
RUN npm run --silent build:server && npm run --silent build:admin

RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node

EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# The same command as `npm start` (after its prestart build), run directly so that SIGTERM reaches the
# server (npm does not forward it), which then finishes in-flight requests and closes the database.
CMD ["node", "dist/server.mjs"]
