/**
 * The page text editor: CodeMirror 6 with Markdown. Loaded on demand (editor.tsx imports this module
 * dynamically), so reading pages never downloads it.
 *
 * It lives in a shadow root: CodeMirror styles itself with a <style> element, which the dashboard's
 * Content-Security-Policy (style-src 'self', no inline styles) refuses on the document, while inside a shadow
 * root it uses a constructed style sheet (adoptedStyleSheets), which the policy allows. Its colours meet 4.5:1
 * on white; Tab is left to move focus (no indent-with-Tab trap).
 */
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { markdownKeymap, markdownLanguage } from '@codemirror/lang-markdown';
import { HighlightStyle, LanguageSupport, syntaxHighlighting } from '@codemirror/language';
import { drawSelection, EditorView, highlightSpecialChars, keymap } from '@codemirror/view';
import { tags as t } from '@lezer/highlight';

export interface PageEditor {
  /** Replaces the whole text (a restored draft, a resolved conflict) without calling onChange. */
  setText(text: string): void;
  focus(): void;
  destroy(): void;
}

const highlight = HighlightStyle.define([
  { tag: t.heading, fontWeight: '700', color: '#1b1f24' },
  { tag: t.emphasis, fontStyle: 'italic' },
  { tag: t.strong, fontWeight: '700' },
  { tag: t.strikethrough, textDecoration: 'line-through' },
  { tag: [t.link, t.url], color: '#0550ae', textDecoration: 'underline' },
  { tag: [t.monospace, t.literal], color: '#7d4e00' },
  { tag: t.quote, color: '#57606a', fontStyle: 'italic' },
  { tag: [t.processingInstruction, t.meta, t.contentSeparator, t.labelName], color: '#57606a' },
  { tag: [t.comment, t.escape], color: '#57606a' },
  { tag: t.invalid, color: '#a40e26' },
]);

const theme = EditorView.theme({
  '&': { border: '1px solid #d0d7de', borderRadius: '6px', background: '#ffffff', color: '#1b1f24', minHeight: '16rem' },
  '&.cm-focused': { outline: '3px solid #f2a900', outlineOffset: '2px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace', fontSize: '0.9rem', lineHeight: '1.5', minHeight: '16rem' },
  '.cm-content': { padding: '0.5rem 0', caretColor: '#1b1f24' },
  '.cm-line': { padding: '0 0.6rem' },
  '.cm-specialChar': { color: '#a40e26' },
});

/** Mounts an editor holding `text` in `host`; `onChange` gets the whole text after every edit. */
export function mountEditor(host: HTMLElement, text: string, label: string, onChange: (text: string) => void): PageEditor {
  const root = host.shadowRoot ?? host.attachShadow({ mode: 'open' });
  root.replaceChildren();
  const parent = document.createElement('div');
  root.append(parent);
  let quiet = false;
  const view = new EditorView({
    doc: text,
    root,
    parent,
    extensions: [
      highlightSpecialChars(),
      history(),
      drawSelection(),
      syntaxHighlighting(highlight),
      // Markdown (GFM) without lang-markdown's embedded HTML support, which would add HTML, CSS and
      // JavaScript modes to the bundle: HTML in pages is shown as plain text.
      new LanguageSupport(markdownLanguage),
      keymap.of([...markdownKeymap, ...defaultKeymap, ...historyKeymap]),
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({ 'aria-label': label, spellcheck: 'true', autocorrect: 'on', autocapitalize: 'sentences' }),
      theme,
      EditorView.updateListener.of((u) => {
        if (u.docChanged && !quiet) onChange(u.state.doc.toString());
      }),
    ],
  });
  return {
    setText(next) {
      if (next === view.state.doc.toString()) return;
      quiet = true;
      try {
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: next } });
      } finally {
        quiet = false;
      }
    },
    focus: () => view.focus(),
    destroy: () => {
      view.destroy();
      root.replaceChildren();
    },
  };
}
