/** GET /v1/limits (docs/api.md "Service"): the server's limits a client sizes its pushes by. */
import * as z from 'zod';

export const LimitsResponse = z.object({
  /** Push body cap in bytes (SERVICE_MAX_BODY_BYTES). */
  max_body_bytes: z.number().int(),
  /** Files one push may hold. */
  max_files_per_push: z.number().int(),
  /** Longest page path, in UTF-8 bytes. */
  max_page_path_bytes: z.number().int(),
});
export type LimitsResponse = z.infer<typeof LimitsResponse>;
