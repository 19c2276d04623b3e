/**
 * A refused CORS origin in the log (lib/framework/http/cors.ts): once per origin, bounded, and wired into the real app
 * (lib/framework/app.ts) so an operator sees which origin to add to SERVICE_CORS_ORIGINS. The browser side — the
 * dashboard saying so — is in test/dashboard-views.test.ts; the Workers build in test/e2e/cases.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import health from '../functions/health.ts';
import { RefusedOriginLog, REFUSED_ORIGIN_MAX_CHARS, corsMiddleware } from '../lib/framework/http/cors.ts';
import { memoryLogger } from '../lib/framework/log.ts';
import { mountHandler, type MountedHandler } from './helpers/handler.ts';

const events = (lines: string[]) =>
  lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l.event).startsWith('cors_'));
const refusedOf = (lines: string[]) => events(lines).map((l) => [l.level, l.event, l.origin]);

describe('corsMiddleware with a logger', () => {
  function corsApp(origins: string[]) {
    const log = memoryLogger();
    const app = new Hono();
    app.use('*', corsMiddleware(origins, log));
    app.get('/p', (c) => c.text('page'));
    return { app, lines: log.lines };
  }

  it('logs a refused origin once, whether it comes with a request or a preflight; allowed ones and no Origin never', async () => {
    const { app, lines } = corsApp(['https://dash.example']);
    const preflight = await app.request('/p', {
      method: 'OPTIONS',
      headers: { Origin: 'http://localhost:5174', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const get = await app.request('/p', { headers: { Origin: 'http://localhost:5174' } });
    expect([get.status, await get.text(), get.headers.get('access-control-allow-origin')]).toEqual([200, 'page', null]);
    await app.request('/p', { headers: { Origin: 'https://dash.example' } });
    await app.request('/p');
    await app.request('/p', { headers: { Origin: '' } });
    await app.request('/p', { headers: { Origin: 'null' } });
    await app.request('/p', { headers: { Origin: 'http://localhost:5174' } });

    expect(refusedOf(lines)).toEqual([
      ['warn', 'cors_origin_refused', 'http://localhost:5174'],
      ['warn', 'cors_origin_refused', 'null'],
    ]);
    expect(events(lines)[0]!.hint).toBe(
      'browser pages of this origin cannot read the answers: if it is your dashboard, add it to SERVICE_CORS_ORIGINS',
    );
  });

  it('`*` refuses nothing, so logs nothing; without a logger nothing is logged either', async () => {
    const { app, lines } = corsApp(['*']);
    await app.request('/p', { headers: { Origin: 'https://anything.example' } });
    expect(lines).toEqual([]);
    const quiet = new Hono().use('*', corsMiddleware(['https://dash.example']));
    quiet.get('/p', (c) => c.text('page'));
    expect((await quiet.request('/p', { headers: { Origin: 'https://elsewhere.example' } })).status).toBe(200);
  });
});

describe('RefusedOriginLog', () => {
  it('remembers at most `max` origins: the next one gets one last line, then nothing more is logged', () => {
    const log = memoryLogger();
    const refusals = new RefusedOriginLog(log, 3);
    for (const o of ['https://a.example', 'https://b.example', 'https://a.example', 'https://c.example', 'https://c.example']) refusals.refused(o);
    expect(refusedOf(log.lines)).toEqual([
      ['warn', 'cors_origin_refused', 'https://a.example'],
      ['warn', 'cors_origin_refused', 'https://b.example'],
      ['warn', 'cors_origin_refused', 'https://c.example'],
    ]);
    refusals.refused('https://d.example');
    refusals.refused('https://e.example');
    refusals.refused('https://a.example');
    refusals.refused('https://d.example');
    const last = events(log.lines).slice(3);
    expect(last).toHaveLength(1);
    expect(last[0]).toMatchObject({
      level: 'warn',
      event: 'cors_origins_refused_unlogged',
      origin: 'https://d.example',
      logged: 3,
      hint: 'more origins were refused; no more are logged until a restart',
    });
  });

  it('logs an overlong Origin header cut to its first characters, and counts the cut form once', () => {
    const log = memoryLogger();
    const refusals = new RefusedOriginLog(log);
    const long = `https://${'x'.repeat(5000)}.example`;
    refusals.refused(long);
    refusals.refused(`${long}.other`);
    expect(refusedOf(log.lines)).toEqual([['warn', 'cors_origin_refused', `${long.slice(0, REFUSED_ORIGIN_MAX_CHARS)}…`]]);
  });
});

describe('the app (lib/framework/app.ts) logs refused origins from SERVICE_CORS_ORIGINS', () => {
  let h: MountedHandler | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('once per origin, beside the access log; the configured origin is answered and not logged', async () => {
    h = await mountHandler(health, { env: { SERVICE_CORS_ORIGINS: 'http://localhost:5173' } });
    for (let i = 0; i < 3; i++) {
      const res = await h.request('/health', { headers: { Origin: 'http://localhost:5174' } });
      expect([res.status, res.headers.get('access-control-allow-origin')]).toEqual([200, null]);
    }
    const ok = await h.request('/health', { headers: { Origin: 'http://localhost:5173' } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(refusedOf(h.logs)).toEqual([['warn', 'cors_origin_refused', 'http://localhost:5174']]);
    expect(h.logs.filter((l) => JSON.parse(l).event === 'request')).toHaveLength(4);
  });
});
