-- The hosted build's list of repositories: their git objects live in one Durable Object per repository,
-- and objects cannot be listed. `id_fold` (the id in lower case) keeps ids unique ignoring letter case;
-- `creator` is the user who created the repository, kept so that a crash between creating it and
-- recording its owner cannot orphan it. The Node build lists the directories under repos/ instead and
-- leaves this table empty.
CREATE TABLE repo_registry (
  id         TEXT PRIMARY KEY,
  id_fold    TEXT NOT NULL UNIQUE,
  creator    TEXT,
  created_at INTEGER NOT NULL
);
