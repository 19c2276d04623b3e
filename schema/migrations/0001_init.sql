-- Accounts, tokens, membership, invites and activity: the records git does not hold.
CREATE TABLE users (
  id         TEXT PRIMARY KEY,            -- UUID v4
  issuer     TEXT NOT NULL,
  subject    TEXT NOT NULL,
  email      TEXT NOT NULL,               -- lowercased
  name       TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  UNIQUE (issuer, subject)
);

CREATE TABLE pats (
  id           TEXT PRIMARY KEY,          -- UUID v4
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  token_hash   TEXT NOT NULL UNIQUE,      -- SHA-256 hex of the whole token; the token itself is never stored
  label        TEXT NOT NULL DEFAULT '',
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER,
  last_used_at INTEGER
);
CREATE INDEX pats_user ON pats (user_id, created_at);

CREATE TABLE members (
  repo_id  TEXT NOT NULL,
  user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role     TEXT NOT NULL CHECK (role IN ('owner', 'member')),
  added_at INTEGER NOT NULL,
  PRIMARY KEY (repo_id, user_id)
);
CREATE INDEX members_user ON members (user_id);

CREATE TABLE invite_keys (
  id         TEXT PRIMARY KEY,            -- UUID v4
  repo_id    TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,        -- SHA-256 hex of the whole token
  label      TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX invite_keys_repo ON invite_keys (repo_id, created_at);

CREATE TABLE activity (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  repo_id    TEXT NOT NULL,
  user_id    TEXT NOT NULL,
  email      TEXT NOT NULL,
  action     TEXT NOT NULL CHECK (action IN ('push', 'pull')),
  detail     TEXT,                        -- JSON object or NULL
  created_at INTEGER NOT NULL
);
CREATE INDEX activity_repo ON activity (repo_id, id);

-- Derived from git and rebuilt from it when missing or behind: never the source of truth.
-- One row per commit on main's first-parent line; seq is its position (root = 1).
CREATE TABLE git_commits (
  repo_id TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  sha     TEXT NOT NULL,
  author  TEXT NOT NULL,
  email   TEXT NOT NULL,
  time    INTEGER NOT NULL,               -- Unix seconds
  message TEXT NOT NULL,                  -- subject line
  PRIMARY KEY (repo_id, seq),
  UNIQUE (repo_id, sha)
);

-- Paths each commit touched; blob NULL means the commit deleted the path.
CREATE TABLE git_changes (
  repo_id TEXT NOT NULL,
  path    TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  blob    TEXT,
  PRIMARY KEY (repo_id, path, seq)
);
CREATE INDEX git_changes_seq ON git_changes (repo_id, seq);

-- Pages at head: path -> blob and the seq of the last commit that touched it.
CREATE TABLE git_head (
  repo_id TEXT NOT NULL,
  path    TEXT NOT NULL,
  blob    TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  PRIMARY KEY (repo_id, path)
);
