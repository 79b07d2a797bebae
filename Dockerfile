# One image for the API, the worker and migrations; docker-compose.yml picks the command.
FROM node:20-bookworm-slim

ENV NODE_ENV=production

# Node 20 ships npm 10; npm 11 reads the project's install-script policy (`allowScripts` in package.json).
RUN npm install --global npm@11.19.1 && npm cache clean --force

WORKDIR /app

# Manifests first, so the dependency layer is rebuilt only when they change. tsx runs the TypeScript
# sources, so no build step and no devDependencies.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY migrations ./migrations

# The code stays root-owned and read-only to the app; only the data directory (DATA_DIR, default .data)
# is writable, and a volume mounted there takes over this ownership.
RUN mkdir .data && chown node:node .data
USER node

EXPOSE 3000
CMD ["node", "--import", "tsx", "src/main/api.ts"]
