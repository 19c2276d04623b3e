-- Event ids of a repository's own (lib/events/log.ts): `seq` numbers a repository's events 1, 2, 3, … so that
-- the ids a stream carries say nothing about how busy other repositories are (the table's AUTOINCREMENT id is
-- one counter for every repository on the server). The events already in the log keep their id as their
-- seq, so the ids clients were handed before this migration still resume; a repository's next event takes the
-- seq after its newest (MAX + 1), so its ids go on from there one by one.
ALTER TABLE repo_events ADD COLUMN seq INTEGER;
UPDATE repo_events SET seq = id;
CREATE UNIQUE INDEX repo_events_seq ON repo_events (repo_id, seq);
