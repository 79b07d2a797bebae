# One image for the API, the worker and migrations; docker-compose.yml picks the command. The build stage
# compiles the TypeScript and bundles the workflows (`npm run build`); the runtime stage holds only the
# production dependencies and dist/.
FROM node:20-bookworm-slim AS base

# Node 20 ships npm 10; npm 11 reads the project's install-script policy (`allowScripts` in package.json).
RUN npm install --global npm@11.19.1 && npm cache clean --force

WORKDIR /app

FROM base AS build

# All dependencies: the compiler, tsx and the workflow bundler's inputs are devDependencies. NODE_ENV is
# left unset here, or npm would skip them.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY migrations ./migrations
RUN npm run build

FROM base AS runtime

ENV NODE_ENV=production
# Stack traces name the TypeScript files and lines (dist/ carries source maps).
ENV NODE_OPTIONS=--enable-source-maps

# Manifests first, so the dependency layer is rebuilt only when they change.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY --from=build /app/dist ./dist

# The code stays root-owned and read-only to the app; only the data directory (DATA_DIR, default .data)
# is writable, and a volume mounted there takes over this ownership.
RUN mkdir .data && chown node:node .data
USER node

EXPOSE 3000
CMD ["node", "dist/src/main/api.js"]
