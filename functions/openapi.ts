import { defineRoute, type RouteDef } from '../lib/framework/route.ts';
import { buildOpenApi } from '../lib/framework/openapi.ts';
import { OpenApiDocument } from '../schema/wire/service.ts';

/** The routes a document describes: every endpoint, and the hosted build's own (functions/index.ts). */
export interface DocumentedRoutes {
  routes: RouteDef[];
  hostedRoutes: RouteDef[];
}

/**
 * GET /openapi.json — the OpenAPI 3.1 document of the routes this server serves: the hosted build's
 * billing and admin routes only when it is hosted. Public, not rate limited (like /health). Built from the
 * lists `listed` gives, asked on the first request: the route is one of them (functions/index.ts makes it).
 */
export function openApiRoute(listed: () => DocumentedRoutes): RouteDef {
  /** The document as JSON text, per build: a pure function of the code, so made once. */
  const cache = new Map<boolean, string>();
  return defineRoute({
    method: 'GET',
    path: '/openapi.json',
    public: true,
    rateLimited: false,
    doc: {
      operationId: 'openApi',
      summary: 'This document',
      description: "The routes this server serves: a self-hosted server's document leaves out the hosted build's routes.",
      tag: 'Service',
      access: 'anyone; no credential.',
      responses: { 200: { description: 'The OpenAPI 3.1 document.', schema: OpenApiDocument } },
    },
    handler: async (c) => {
      const hosted = c.get('deps').config.hosted;
      let text = cache.get(hosted);
      if (text === undefined) {
        const { routes, hostedRoutes } = listed();
        text = JSON.stringify(buildOpenApi({ routes, ...(hosted ? { hostedRoutes } : {}) }));
        cache.set(hosted, text);
      }
      return c.body(text, 200, { 'Content-Type': 'application/json' });
    },
  });
}
