import { z } from 'zod';
import { defineRoute } from '../../lib/framework/route.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { signInWithIdToken } from '../../lib/auth/idp.ts';
import { IdpSignInRequest, IdpSignInResponse } from '../../schema/wire/auth.ts';

/**
 * POST /v1/auth/idp — exchange an identity-provider ID token for a session token. Public (no bearer),
 * behind its own rate limiter. 503 when no client id is configured, checked before anything else.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/auth/idp',
  public: true,
  limiter: 'auth',
  body: 'small',
  doc: {
    operationId: 'signIn',
    summary: "Exchange an identity provider's ID token for a session token",
    description:
      'The ID token must be RS256, signed by a key of `IDP_JWKS_URL`, from an issuer of `IDP_ISSUERS`, for the audience `IDP_OAUTH_CLIENT_ID`, unexpired, with a verified email. The session token lasts 30 days. The first user ever created becomes owner of every repository without one.',
    tag: 'Accounts',
    access: 'anyone; no bearer token.',
    body: { schema: IdpSignInRequest },
    responses: { 200: { description: 'A session token and the user it belongs to.', schema: IdpSignInResponse } },
    errors: [R.id_token_required, R.invalid_id_token, R.account_disabled, R.idp_not_configured, R.idp_unavailable],
  },
  handler: async (c) => {
    const deps = c.get('deps');
    if (!deps.config.idpClientId) throw refuse(R.idp_not_configured);
    const body = IdpSignInRequest.safeParse(await parseBody(c, z.unknown(), { emptyAsObject: true }));
    if (!body.success) throw refuse(R.id_token_required);
    const { accessToken, user } = await signInWithIdToken(deps, body.data.id_token);
    c.header('Cache-Control', 'no-store');
    const res: IdpSignInResponse = { access_token: accessToken, user: { id: user.id, email: user.email, name: user.name } };
    return c.json(res);
  },
});
