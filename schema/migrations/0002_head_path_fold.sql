-- Pages at head keyed by case: `path_fold` is the page path folded the way a case-insensitive disk would
-- see it (lib/page/path.ts foldPathCase), so that a push can refuse a new path that differs from an existing
-- one only in letter case with one indexed lookup per pushed path. SQLite's lower() folds ASCII only, so the
-- service computes the value: rows indexed before this migration hold NULL until the index fills them in
-- (lib/git/path-index.ts, on its first sync of the repository). Derived, like the rest of the index.
ALTER TABLE git_head ADD COLUMN path_fold TEXT;
CREATE INDEX git_head_fold ON git_head (repo_id, path_fold);
