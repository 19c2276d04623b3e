-- Live events and webhooks (lib/events/). On the Node build these tables sit in the server's database, beside
-- the index; on the hosted build in each repository's Durable Object (its own SQLite, the same migrations),
-- so that a push writes its commit's index rows, its event and its webhook deliveries in one transaction on
-- both builds. (The hosted build's D1 gets these tables too, and leaves them empty.) Everything is keyed by
-- repo_id, so that deleting a repository can drop its events, webhooks and deliveries.

-- The event log: one row per push or member change, ids increasing within a repository (AUTOINCREMENT: an id
-- is never given twice, even after the rows of a commit git never reached are cut back). Pruned to the newest
-- 1,000 per repository as new ones arrive. `data` is the event's JSON as the stream and webhooks carry it.
-- `commit_sha` names a push event's commit: the index sync that cuts back commits git never reached removes
-- their events with them.
CREATE TABLE repo_events (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  repo_id    TEXT NOT NULL,
  kind       TEXT NOT NULL,
  data       TEXT NOT NULL,
  commit_sha TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX repo_events_repo ON repo_events (repo_id, id);

-- A repository's webhooks. `events` is the comma-separated kinds it receives (`push`, `member`); `secret` is the
-- HMAC key of its signatures, kept as it is (signing needs the key itself, so it cannot be stored hashed).
CREATE TABLE webhooks (
  id         TEXT PRIMARY KEY,
  repo_id    TEXT NOT NULL,
  url        TEXT NOT NULL,
  events     TEXT NOT NULL,
  secret     TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX webhooks_repo ON webhooks (repo_id, created_at);

-- The outbox: one row per event and webhook. A push's rows are written in the push's own transaction, held
-- (`next_attempt_ms` NULL) until its commit is published, then due. `status`: pending, delivered or failed.
-- Times in `*_ms` are clock milliseconds (the retry schedule is finer than seconds in tests); `created_at`
-- is Unix seconds like everywhere else.
CREATE TABLE webhook_deliveries (
  id               TEXT PRIMARY KEY,
  webhook_id       TEXT NOT NULL,
  repo_id          TEXT NOT NULL,
  event            TEXT NOT NULL,
  data             TEXT NOT NULL,
  commit_sha       TEXT,
  status           TEXT NOT NULL,
  attempts         INTEGER NOT NULL DEFAULT 0,
  last_status      INTEGER,
  last_error       TEXT,
  first_attempt_ms INTEGER,
  next_attempt_ms  INTEGER,
  created_at       INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, created_at);
CREATE INDEX webhook_deliveries_repo ON webhook_deliveries (repo_id, commit_sha);
