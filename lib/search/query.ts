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
 * only operators, or only exclusions; more than MAX_TERMS terms; a term over MAX_TERM_CHARS characters.
 */
import { HttpError } from '../http/errors.ts';

/** Most terms a query may have (an exclusion counts as one). */
export const MAX_TERMS = 32;
/** Longest term, in characters (UTF-16 code units, as typed, without its quotes and `-`/`*`). */
export const MAX_TERM_CHARS = 200;

/** Every message a refused query may carry (for the API's reference). */
export const QUERY_ERRORS = [
  'q required',
  'invalid query: unbalanced quote',
  'invalid query: nothing to search for (only operators or punctuation)',
  'invalid query: only exclusions; add a word to search for',
  `invalid query: more than ${MAX_TERMS} terms`,
  `invalid query: a term is longer than ${MAX_TERM_CHARS} characters`,
];

/** A refused query: 400 with a message that says what is wrong. */
export class SearchQueryError extends HttpError {
  constructor(message: string) {
    super(400, message);
    this.name = 'SearchQueryError';
  }
}

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
 * What FTS5's unicode61 tokenizer keeps as word characters: letters, digits, private-use characters, and
 * (since diacritics are removed) combining marks. Anything else separates words.
 */
const WORD_CHAR = /[\p{L}\p{N}\p{Co}\p{Mn}]/u;
const SPACE = /\s/u;

/** An FTS5 string: the text between double quotes, any `"` doubled. */
const ftsString = (s: string) => `"${s.replaceAll('"', '""')}"`;

/**
 * Parses the user's query. Throws SearchQueryError for what cannot be searched (see the module comment).
 */
export function parseQuery(q: string | undefined | null): ParsedQuery {
  if (q === undefined || q === null) throw new SearchQueryError('q required');
  // NFC: "é" typed as e + U+0301 is the same word as the precomposed "é" of the index.
  // Control characters (NUL included) separate words like spaces do.
  // eslint-disable-next-line no-control-regex
  const text = q.normalize('NFC').replace(/[\u0000-\u001f\u007f]/g, ' ');
  const raw: SearchTerm[] = [];
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
      if (close < 0) throw new SearchQueryError('invalid query: unbalanced quote');
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
      throw new SearchQueryError(`invalid query: a term is longer than ${MAX_TERM_CHARS} characters`);
    }
    raw.push({ text: body, phrase, prefix, exclude });
    if (raw.length > MAX_TERMS) throw new SearchQueryError(`invalid query: more than ${MAX_TERMS} terms`);
  }
  if (raw.length === 0) throw new SearchQueryError('q required');
  // A term with no word character has nothing to match (`*`, `-`, `:`, `""`).
  const terms = raw.filter((t) => WORD_CHAR.test(t.text));
  if (terms.length === 0) throw new SearchQueryError('invalid query: nothing to search for (only operators or punctuation)');
  const include = terms.filter((t) => !t.exclude);
  const exclude = terms.filter((t) => t.exclude);
  if (include.length === 0) throw new SearchQueryError('invalid query: only exclusions; add a word to search for');
  const atom = (t: SearchTerm) => `${ftsString(t.text)}${t.prefix ? '*' : ''}`;
  let match = include.map(atom).join(' AND ');
  if (exclude.length > 0) match = `(${match}) NOT (${exclude.map(atom).join(' OR ')})`;
  return { terms, match };
}
