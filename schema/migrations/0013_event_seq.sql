-- Event ids of a repository's own (lib/events/log.ts): `seq` numbers a repository's events 1, 2, 3, … so that
-- the ids a stream carries say nothing about how busy other repositories are (the table's AUTOINCREMENT id is
-- one counter for every repository on the server). The events already in the log keep their id as their
-- seq, so the ids clients were handed before this migration still resume, and each repository's counter
-- starts from its newest id, so its ids go on from there one by one.
ALTER TABLE repo_events ADD COLUMN seq INTEGER;
UPDATE repo_events SET seq = id;
CREATE UNIQUE INDEX repo_events_seq ON repo_events (repo_id, seq);

-- The last seq given per repository: never given again, even after the events of commits git never reached
-- are cut back (a client may hold such an id; reusing it would make it skip the event that took it).
CREATE TABLE repo_event_seq (
  repo_id TEXT PRIMARY KEY,
  last    INTEGER NOT NULL
);
INSERT INTO repo_event_seq (repo_id, last) SELECT repo_id, MAX(id) FROM repo_events GROUP BY repo_id;
