-- The commit a push event records, where the event is written in the same transaction as the commit's index
-- rows (the Node build): that transaction commits while the commit's objects are still being flushed, so a
-- crash or a failed write there leaves rows for a commit the branch never reached. The index sync that cuts
-- the index back to git (lib/git/path-index.ts) removes such events with them: no event for a push that was
-- never acknowledged. NULL for pulls, and for events recorded on their own after the commit.
ALTER TABLE activity ADD COLUMN commit_sha TEXT;
