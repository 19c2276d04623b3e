-- Links between pages (lib/links/, docs/api.md "Pages", the links route). Derived from git like the rest of the index:
-- written in the batch that records each commit, and caught up from git_head and the blobs when missing or
-- behind (a database from before this migration is filled in on each repository's first sync). Kept where
-- the index is: the Node build's database file, each repository's Durable Object on the hosted build (D1
-- holds these tables empty).

-- One row per page at head whose links are in page_links: `blob` is the content they were made from (sync
-- looks again at a page whose git_head blob differs), `title` its frontmatter title (the "Linked from" list).
CREATE TABLE page_link_sources (
  repo_id TEXT NOT NULL,
  path    TEXT NOT NULL,
  blob    TEXT NOT NULL,
  title   TEXT,
  PRIMARY KEY (repo_id, path)
);

-- The links a page makes, as written and unresolved (resolution depends on the pages at head when asked):
-- `[[slug]]` sets slug, `[[type/slug]]` slug and type, a markdown link to a relative .md file the path it
-- names (resolved against the linking page's folder); a target that can name no page sets none of them.
-- `ord` is the link's place among the page's distinct targets, in document order.
CREATE TABLE page_links (
  repo_id TEXT NOT NULL,
  source  TEXT NOT NULL,
  ord     INTEGER NOT NULL,
  target  TEXT NOT NULL,
  slug    TEXT,
  type    TEXT,
  path    TEXT,
  PRIMARY KEY (repo_id, source, ord)
);
-- The pages that link to a page: by its path, and by its slug (and type).
CREATE INDEX page_links_path ON page_links (repo_id, path);
CREATE INDEX page_links_slug ON page_links (repo_id, slug, type);
