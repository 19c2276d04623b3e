/**
 * How the clients name and show the parts a section merge reports (`conflicting`: `frontmatter`,
 * `frontmatter.<key>`, `_preamble`, a heading): kr's terminal labels (client/merged.ts) and kr mcp's brief
 * (mcp/merge.ts).
 */
import { describe, expect, it } from 'vitest';
import { partLabel } from '../client/merged.ts';
import { partName, partText } from '../mcp/merge.ts';

const PAGE = '---\ntitle: Log\n# owner: ops\nstatus: draft\n---\nIntro.\n\n## Decision\nUse git.\n';

describe('names of merged parts in the clients', () => {
  it('the frontmatter block is named as such, and shown as written with its fences', () => {
    expect(partLabel('frontmatter')).toBe('frontmatter (comments, key order or formatting)');
    expect(partName('frontmatter')).toBe('(the frontmatter block: its comments, key order or formatting)');
    expect(partText(PAGE, 'frontmatter', false)).toBe('---\ntitle: Log\n# owner: ops\nstatus: draft\n---');
    expect(partText('no frontmatter\n', 'frontmatter', true)).toBeNull();
  });

  it('keys, the preamble and headings keep their names', () => {
    expect(partLabel('frontmatter.status')).toBe('frontmatter status');
    expect(partName('frontmatter.status')).toBe('frontmatter field "status"');
    expect(partText(PAGE, 'frontmatter.status', false)).toBe('status: draft');
    expect(partText(PAGE, '## Decision', false)).toBe('## Decision\nUse git.');
    expect(partText(PAGE, '_preamble', false)).toBe('Intro.');
  });
});
