-- The PAT a PAT was minted with (POST /v1/pats authenticated by a PAT): revoking a PAT deletes every PAT
-- minted with it, transitively, in the same statement (lib/db/pats.ts), so none outlives its revocation.
-- NULL: minted with a session or by the admin command, or before this column existed.
ALTER TABLE pats ADD COLUMN parent_id TEXT;
CREATE INDEX pats_parent ON pats (parent_id);
