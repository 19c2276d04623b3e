/**
 * Full-text search (docs/api.md "Search"): `GET /v1/repos/:id/search` and `GET /v1/search`. The query
 * language is lib/core/search-query.ts's; ranking and snippets are lib/search/results.ts's.
 */
import * as z from 'zod';

export const SearchQuery = z.object({
  q: z
    .string()
    .describe(
      'The query: words (all required), "exact phrases", prefix* and -excluded terms; case and diacritics are ignored. ' +
        'Anything else is searched for as words (FTS syntax such as OR, NEAR( or col: is not interpreted). ' +
        'At most 16 words (each word of a phrase counts), at most 4 prefixes, each of at least 3 letters or digits; ' +
        'a term is at most 200 characters.',
    ),
  type: z.string().optional().describe('Only pages whose frontmatter `type` (else the type of their path) is exactly this.'),
  tag: z.string().optional().describe('Only pages whose frontmatter `tags` include exactly this one.'),
  limit: z
    .number()
    .int()
    .min(1)
    .default(20)
    .describe('How many results at most: default 20, capped at 100; anything but a positive integer means 20.'),
  offset: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe('Results to skip, best first; anything but a non-negative integer means 0. From 1,000 on no result is returned (`total` still counts).'),
});

export const SearchResult = z.object({
  repo_id: z.string(),
  path: z.string(),
  title: z.string().optional().describe('Frontmatter `title`, when the page has one.'),
  type: z.string().optional().describe('Frontmatter `type`, else the type of the layout path, when there is one.'),
  tags: z.array(z.string()).optional().describe('Frontmatter `tags`, when the page has any.'),
  snippet: z
    .string()
    .describe('About 16 words of the best-matching field, each match between « and », … where cut; a « or » of the page itself shows as ‹ or ›.'),
  score: z.number().describe('Relevance, higher is better (-bm25, title ×10, tags ×8, summary and headings ×5, body ×1); compare within one answer.'),
  sha: z.string().describe("The page's last commit."),
});
export type SearchResult = z.infer<typeof SearchResult>;

export const SearchResponse = z.object({
  results: z.array(SearchResult).describe('Best first.'),
  total: z.number().int().describe('Every match, whatever limit and offset.'),
});
export type SearchResponse = z.infer<typeof SearchResponse>;
