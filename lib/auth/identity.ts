/** Who is calling, once the credential has been resolved (lib/auth/middleware.ts). */
export type Identity =
  | { kind: 'legacy' }
  | {
      kind: 'user';
      userId: string;
      email: string;
      name: string;
      /** How the user authenticated. */
      via: 'session' | 'pat';
      /** The PAT used, when via = 'pat'. */
      patId?: string;
    };

export type UserIdentity = Extract<Identity, { kind: 'user' }>;

export const LEGACY: Identity = { kind: 'legacy' };

export const isUser = (i: Identity | undefined | null): i is UserIdentity => i?.kind === 'user';
