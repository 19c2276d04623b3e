import * as z from 'zod';

export const Member = z.object({
  user_id: z.string(),
  email: z.string(),
  role: z.enum(['owner', 'member']),
  added_at: z.number().int(),
});
export type Member = z.infer<typeof Member>;
export const MembersResponse = z.object({ members: z.array(Member) });
export type MembersResponse = z.infer<typeof MembersResponse>;

export const InviteKey = z.object({
  id: z.string(),
  label: z.string(),
  created_at: z.number().int(),
  expires_at: z.number().int(),
});
export type InviteKey = z.infer<typeof InviteKey>;

/** `label`: at most 200 characters (checked by lib/usecases/shape.ts checkLabel, for the exact error). */
export const MintInviteRequest = z.object({ label: z.string().optional() });
export const MintInviteResponse = z.object({ key: InviteKey, token: z.string() });
export type MintInviteResponse = z.infer<typeof MintInviteResponse>;
export const InviteKeysResponse = z.object({ keys: z.array(InviteKey) });
export type InviteKeysResponse = z.infer<typeof InviteKeysResponse>;

export const JoinRequest = z.object({ key: z.unknown().optional() });
export const JoinResponse = z.object({ repo_id: z.string(), role: z.enum(['owner', 'member']) });
export type JoinResponse = z.infer<typeof JoinResponse>;

/** (ours) `POST /v1/repos/:id/members/:userId/role`: anything but "owner" or "member" is 400 `role must be owner or member`. */
export const SetRoleRequest = z.object({
  role: z
    .unknown()
    .optional()
    .meta({ description: 'Required: `"owner"` or `"member"`; anything else, or none: 400 `role must be owner or member`.', enum: ['owner', 'member'] }),
});
export const SetRoleResponse = z.object({ user_id: z.string(), email: z.string(), role: z.enum(['owner', 'member']) });
export type SetRoleResponse = z.infer<typeof SetRoleResponse>;
