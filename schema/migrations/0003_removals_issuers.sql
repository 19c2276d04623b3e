-- A removed member stays removed: the invite keys of a repository that existed when a user was removed
-- from it never readmit that user (keys minted later do). One row per (key, removed user).
CREATE TABLE invite_key_exclusions (
  key_id  TEXT NOT NULL,
  user_id TEXT NOT NULL,
  PRIMARY KEY (key_id, user_id)
);

-- An issuer with and without https:// is one issuer (accounts.google.com = https://accounts.google.com):
-- issuers are stored with their scheme. A row whose normalised twin already exists is left as it was.
UPDATE OR IGNORE users SET issuer = 'https://' || issuer WHERE instr(issuer, '://') = 0;
