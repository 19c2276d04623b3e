/**
 * Text helpers of the API client that run anywhere (Node and the browser): no Node module, no DOM.
 */

/**
 * One value from the server or from page files, made safe to put into a line: control characters other
 * than tab (a newline would forge a line; ESC sequences could rewrite the screen or the window title) are
 * shown as `?`.
 */
export function clean(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g, '?');
}

/** `30000` → `30`, `1500` → `1.5`: a time limit as people write it. */
export const seconds = (ms: number): string => String(Number((ms / 1000).toFixed(3)));

/** `a/b c.md` → `a/b%20c.md`: a page path in a URL, each segment encoded, slashes kept. */
export const encodePath = (path: string): string => path.split('/').map(encodeURIComponent).join('/');
