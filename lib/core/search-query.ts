/**
 * The search query language, and its translation into an SQLite FTS5 MATCH expression. The user's text
 * never reaches MATCH as it was typed: it is cut into terms here, and every term becomes an FTS5 string
 * ("..." with `"` doubled), so FTS5's own syntax (AND, OR, NOT, NEAR(...), column filters `col:`, `^`,
 * `+`, parentheses) is never interpreted — typed, it is searched for as words.
 *
 * The language (whitespace separates terms; every term is required):
 *   word        pages containing the word (case and diacritics ignored: `resume` finds `Résumé`)
 *   "a b c"     the words next to each other, in that order
 *   word*       a word starting with `word` (also `"a b"*`: the last word of the phrase as a prefix)
 *   -word       pages without the word (also `-"a b"`, `-word*`); at least one term must be positive
 * Inside a term, characters that are not letters or digits separate words, as the index does: `foo-bar`
 * and `col:x` are the phrases "foo bar" and "col x". A term without any letter or digit (`*`, `-`, `:`)
 * carries nothing to search for and is dropped.
 *
 * Refused with SearchQueryError (400): no `q` or nothing but separators (`q required`); an unbalanced `"`;
 * only operators, or only exclusions; a term over MAX_TERM_CHARS characters; a query past its cost budget.
 *
 * The cost budget. A query's work grows with the words it names, each one a list of every page holding it,
 * and a prefix is as many lists as the index has words starting with it: two letters expand to thousands
 * (measured in a 30,000-page repository: `ka*` 0.7 s, 32 words 2.6 s, four two-letter prefixes 4.4 s; one
 * three-letter prefix 80 ms, docs/architecture.md). So a query holds at most MAX_WORDS words in all (a
 * phrase's words and exclusions count one each), at most MAX_PREFIXES of them prefixes, each prefix at least
 * MIN_PREFIX_CHARS letters or digits long. Decided from the text alone, before any index is read: the same
 * answer on both builds and for every repository.
 */
import { SearchQueryError } from './errors.ts';
import { R, type DocRefusal } from './refusals.ts';

/** Longest term, in characters (UTF-16 code units, as typed, without its quotes and `-`/`*`). */
export const MAX_TERM_CHARS = 200;
/** Most words a query may name, phrases' words and exclusions included. */
export const MAX_WORDS = 16;
/** Most prefix terms (`word*`) a query may have. */
export const MAX_PREFIXES = 4;
/** Fewest letters or digits a prefix may have (the last word of `"a b"*`). */
export const MIN_PREFIX_CHARS = 3;

/** Every refusal of a query, as the API's reference lists them. */
export const QUERY_ERRORS: DocRefusal[] = [
  R.q_required,
  R.invalid_query.example('unbalanced quote'),
  R.invalid_query.example('nothing to search for (only operators or punctuation)'),
  R.invalid_query.example('only exclusions; add a word to search for'),
  R.invalid_query.example(`a term is longer than ${MAX_TERM_CHARS} characters`),
  R.invalid_query.example(`more than ${MAX_WORDS} words`),
  R.invalid_query.example(`more than ${MAX_PREFIXES} prefixes (word*)`),
  R.invalid_query.example(`a prefix needs at least ${MIN_PREFIX_CHARS} letters or digits before *`),
];

/** A refused query: 400 with a message that says what is wrong (defined with the other errors). */
export { SearchQueryError };

export interface SearchTerm {
  /** The text to search for, as typed (without quotes, `-` and `*`), NFC-normalised. */
  text: string;
  /** Written between double quotes. */
  phrase: boolean;
  /** Ends with `*`: the last word is a prefix. */
  prefix: boolean;
  /** Starts with `-`: pages containing it are left out. */
  exclude: boolean;
}

export interface ParsedQuery {
  terms: SearchTerm[];
  /** The FTS5 MATCH expression (only FTS5 strings, AND, NOT and parentheses). */
  match: string;
}

/**
 * The words of a term as FTS5's unicode61 tokenizer cuts them: runs of letters, digits, private-use
 * characters and (since diacritics are removed) combining marks. Anything else separates words.
 */
const WORDS = /[\p{L}\p{N}\p{Co}\p{Mn}]+/gu;
const SPACE = /\s/u;

/** An FTS5 string: the text between double quotes, any `"` doubled. */
const ftsString = (s: string) => `"${s.replaceAll('"', '""')}"`;

/**
 * Parses the user's query. Throws SearchQueryError for what cannot be searched (see the module comment).
 */
export function parseQuery(q: string | undefined | null): ParsedQuery {
  if (q === undefined || q === null) throw new SearchQueryError(null);
  // NFC: "é" typed as e + U+0301 is the same word as the precomposed "é" of the index.
  // Control characters (NUL included) separate words like spaces do.
  // eslint-disable-next-line no-control-regex
  const text = q.normalize('NFC').replace(/[\u0000-\u001f\u007f]/g, ' ');
  const terms: SearchTerm[] = [];
  /** Any term at all was typed (only separators: `q required`). */
  let seen = false;
  let words = 0;
  let prefixes = 0;
  let i = 0;
  while (i < text.length) {
    if (SPACE.test(text[i]!)) {
      i++;
      continue;
    }
    let exclude = false;
    if (text[i] === '-') {
      exclude = true;
      i++;
    }
    let phrase = false;
    let body: string;
    if (text[i] === '"') {
      const close = text.indexOf('"', i + 1);
      if (close < 0) throw new SearchQueryError('unbalanced quote');
      phrase = true;
      body = text.slice(i + 1, close);
      i = close + 1;
    } else {
      const start = i;
      while (i < text.length && !SPACE.test(text[i]!) && text[i] !== '"') i++;
      body = text.slice(start, i);
      // `foo"bar"`: a quote inside a word starts a phrase of its own (next round), or is unbalanced.
    }
    let prefix = false;
    if (text[i] === '*') {
      // `"a b"*`: the star right after a closing quote.
      prefix = true;
      i++;
    }
    if (!phrase) {
      const stars = /\*+$/.exec(body);
      if (stars) {
        prefix = true;
        body = body.slice(0, stars.index);
      }
    }
    if (body.length > MAX_TERM_CHARS) {
      throw new SearchQueryError(`a term is longer than ${MAX_TERM_CHARS} characters`);
    }
    seen = true;
    // A term with no word character has nothing to match (`*`, `-`, `:`, `""`): dropped, and free.
    const found = body.match(WORDS);
    if (!found) continue;
    // Counted as the terms come, so that a long query is refused after its first MAX_WORDS words.
    words += found.length;
    if (words > MAX_WORDS) throw new SearchQueryError(`more than ${MAX_WORDS} words`);
    if (prefix) {
      if (++prefixes > MAX_PREFIXES) throw new SearchQueryError(`more than ${MAX_PREFIXES} prefixes (word*)`);
      if ([...found[found.length - 1]!].length < MIN_PREFIX_CHARS) {
        throw new SearchQueryError(`a prefix needs at least ${MIN_PREFIX_CHARS} letters or digits before *`);
      }
    }
    terms.push({ text: body, phrase, prefix, exclude });
  }
  if (!seen) throw new SearchQueryError(null);
  if (terms.length === 0) throw new SearchQueryError('nothing to search for (only operators or punctuation)');
  const include = terms.filter((t) => !t.exclude);
  const exclude = terms.filter((t) => t.exclude);
  if (include.length === 0) throw new SearchQueryError('only exclusions; add a word to search for');
  const atom = (t: SearchTerm) => `${ftsString(t.text)}${t.prefix ? '*' : ''}`;
  let match = include.map(atom).join(' AND ');
  if (exclude.length > 0) match = `(${match}) NOT (${exclude.map(atom).join(' OR ')})`;
  return { terms, match };
}
