-- Full-text search over the pages at head (lib/git/path-index.ts, lib/search/). Derived from git like the
-- rest of the index: kept in step in the batch that records each commit, and caught up from git_head and the
-- blobs when missing or behind (a database that had the index before this migration is filled in on each
-- repository's first sync).
--
-- The text itself is in `search_fts`, an FTS5 table that the index creates where it runs (PathIndex,
-- `CREATE VIRTUAL TABLE IF NOT EXISTS`), not here: these migrations also run on the hosted build's D1, which
-- never holds an index, and `wrangler d1 export` refuses a whole database that has an FTS5 table in it.

-- One row per page at head that search_fts holds: `id` is the rowid of its search_fts row, `blob` the content
-- it was made from (sync re-indexes a page whose git_head blob differs). `title`, `type` and `tags` (a JSON
-- array) are what a result shows; `tag_key` is the tags joined and wrapped in U+001F, so that a tag filter is
-- an exact match with instr().
CREATE TABLE search_docs (
  id      INTEGER PRIMARY KEY,
  repo_id TEXT NOT NULL,
  path    TEXT NOT NULL,
  blob    TEXT NOT NULL,
  title   TEXT,
  type    TEXT,
  tags    TEXT,
  tag_key TEXT,
  UNIQUE (repo_id, path)
);
