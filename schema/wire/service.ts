/** Bodies of the service routes outside `/v1`: the health check and the API's own description. */
import * as z from 'zod';

/** `GET /health`. */
export const HealthResponse = z.object({ status: z.literal('ok') });
export type HealthResponse = z.infer<typeof HealthResponse>;

/** `GET /openapi.json`: an OpenAPI 3.1 document (lib/framework/openapi.ts builds it; its own schema is OpenAPI's). */
export const OpenApiDocument = z
  .object({
    openapi: z.string(),
    info: z.object({ title: z.string(), version: z.string() }).loose(),
    paths: z.record(z.string(), z.unknown()),
  })
  .loose();
export type OpenApiDocument = z.infer<typeof OpenApiDocument>;
