/** Rendered page text (content.ts renderMarkdown), with the buttons that load held-back media when pressed. */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { renderMarkdown, type RenderContext } from './content.ts';

export function Markdown({ text, ctx, label }: { text: string; ctx?: RenderContext; label?: string }) {
  const [load, setLoad] = useState<ReadonlySet<number>>(() => new Set());
  const ref = useRef<HTMLElement>(null);
  // Another text starts with every remote image and medium held back again.
  useEffect(() => setLoad(new Set()), [text]);
  const html = useMemo(() => renderMarkdown(text, ctx, load), [text, ctx, load]);
  const onClick = (e: MouseEvent) => {
    const button = (e.target as Element | null)?.closest?.('button[data-kr-media]');
    if (!button || !ref.current?.contains(button)) return;
    const n = Number(button.getAttribute('data-kr-media'));
    if (Number.isInteger(n)) setLoad((old) => new Set(old).add(n));
  };
  return <article ref={ref} class="markdown" aria-label={label} onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
}
