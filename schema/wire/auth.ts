/** Wire bodies of sign-in, /v1/me and personal access tokens (docs/api.md "Accounts"). */
import * as z from 'zod';

/** POST /v1/auth/idp. Anything but a non-empty string in `id_token` is answered 400 `id_token required`. */
export const IdpSignInRequest = z.object({ id_token: z.string().min(1) });
export type IdpSignInRequest = z.infer<typeof IdpSignInRequest>;

/** `{"id","email","name"}`: the user in the sign-in answer (GET /v1/me adds what the server offers them). */
export const UserInfo = z.object({ id: z.string(), email: z.string(), name: z.string() });
export type UserInfo = z.infer<typeof UserInfo>;

export const IdpSignInResponse = z.object({ access_token: z.string(), user: UserInfo });
export type IdpSignInResponse = z.infer<typeof IdpSignInResponse>;

/**
 * GET /v1/me: the user, what kind of server answers (`server.hosted`: the hosted build, with billing) and,
 * on the hosted build only, `admin: true` for a user in SERVICE_ADMIN_EMAILS. Clients decide from it which
 * views exist instead of probing routes that would answer 404 or 403.
 */
export const MeResponse = UserInfo.extend({
  server: z.object({ hosted: z.boolean() }),
  admin: z.literal(true).optional(),
});
export type MeResponse = z.infer<typeof MeResponse>;

export const PAT_MAX_DAYS = 366;

/** POST /v1/pats; an empty body means `{}`. */
export const CreatePatRequest = z.object({
  label: z.string().optional(),
  expires_in_days: z
    .custom<number>((v) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= PAT_MAX_DAYS, {
      message: `must be an integer from 1 to ${PAT_MAX_DAYS}`,
    })
    .meta({ type: 'integer', minimum: 1, maximum: PAT_MAX_DAYS }) // its JSON Schema, for the API reference
    .optional(),
});
export type CreatePatRequest = z.infer<typeof CreatePatRequest>;

/** A PAT as shown: never the token or its hash. Times are Unix seconds. */
export const PatInfo = z.object({
  id: z.string(),
  label: z.string(),
  created_at: z.number().int(),
  expires_at: z.number().int().optional(),
  last_used_at: z.number().int().optional(),
});
export type PatInfo = z.infer<typeof PatInfo>;

export const CreatePatResponse = z.object({ pat: PatInfo, token: z.string().startsWith('krp_') });
export type CreatePatResponse = z.infer<typeof CreatePatResponse>;

/** (ours) `current: true` marks the token the listing request was made with. */
export const PatListItem = PatInfo.extend({
  current: z.literal(true).optional().describe('Present on the token this request was made with (the one in use), when it was made with one.'),
});
export type PatListItem = z.infer<typeof PatListItem>;

export const PatsResponse = z.object({ pats: z.array(PatListItem) });
export type PatsResponse = z.infer<typeof PatsResponse>;
