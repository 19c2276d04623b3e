-- Activity gains `member` (a membership change: a join by invite key, a removal, a role change). The feed
-- read without `?actions=` leaves these rows out, and they are pruned apart from the others: each class has
-- an index of its own (partial), so that a push's prune and the default feed walk only their own rows.
-- SQLite cannot change a CHECK constraint in place: the table is made again with the wider one, its rows
-- (ids included) copied over, and its index made again.
CREATE TABLE activity_next (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  repo_id    TEXT NOT NULL,
  user_id    TEXT NOT NULL,
  email      TEXT NOT NULL,
  action     TEXT NOT NULL CHECK (action IN ('push', 'pull', 'import', 'member')),
  detail     TEXT,
  created_at INTEGER NOT NULL,
  commit_sha TEXT
);
INSERT INTO activity_next (id, repo_id, user_id, email, action, detail, created_at, commit_sha)
  SELECT id, repo_id, user_id, email, action, detail, created_at, commit_sha FROM activity;
DROP TABLE activity;
ALTER TABLE activity_next RENAME TO activity;
CREATE INDEX activity_repo ON activity (repo_id, id);
CREATE INDEX activity_feed ON activity (repo_id, id) WHERE action <> 'member';
CREATE INDEX activity_member ON activity (repo_id, id) WHERE action = 'member';
