import * as z from 'zod';

/** (ours) A link a page makes: `path` when it names exactly one page at head; `ambiguous` when a slug names several. */
export const OutgoingLink = z.object({
  target: z.string().describe('The target as written: `postgres`, `entities/postgres`, `../entities/postgres.md` (no shown text, no anchor).'),
  path: z.string().optional().describe('The page it resolves to at head; omitted when nothing (or more than one page) resolves.'),
  ambiguous: z.literal(true).optional().describe('The slug names a page under several types: `[[type/slug]]` picks one.'),
});
export type OutgoingLink = z.infer<typeof OutgoingLink>;

/** (ours) A page at head that links to the page. */
export const IncomingLink = z.object({
  path: z.string(),
  title: z.string().optional().describe("The linking page's frontmatter `title`, when it has one."),
});
export type IncomingLink = z.infer<typeof IncomingLink>;

/** (ours) `GET /v1/repos/:id/links/<path>`. */
export const LinksResponse = z.object({
  path: z.string(),
  outgoing: z.array(OutgoingLink).describe('What the page links to, in document order, each distinct target once (its first occurrence).'),
  incoming: z.array(IncomingLink).describe('The pages at head that link to it, sorted by path (at most 1000).'),
  incoming_more: z.number().int().optional().describe('How many more pages link to it than `incoming` lists (only past 1000).'),
});
export type LinksResponse = z.infer<typeof LinksResponse>;
