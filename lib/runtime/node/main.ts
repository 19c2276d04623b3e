import { ConfigError, loadConfig, type Config } from '../../framework/config.ts';
import { jsonLogger } from '../../framework/log.ts';
import type { RouteDef } from '../../framework/route.ts';
import { openNodeDeps, startServer } from './server.ts';

/**
 * The Node server: environment → config → deps (libSQL file, git store on disk) → app → HTTP server. The routes
 * are handed in by the entry (server.ts: functions/index.ts's `routesFor`), so that lib/ never imports functions/.
 *
 * The server listens only once the database is open and migrated: `/health` answering 200 means every route
 * can be served. A crash's leftovers in a repository (a dead writer's lock, temporary files) are cleared before
 * that repository's first write and by a pass right after listening (logged as `recovered`), so that the boot
 * work does not grow with the number of repositories; it takes milliseconds (reported as `boot_ms` in the
 * `listening` line, beside the time spent loading the code), and most of a boot is node loading the bundle.
 */
/** How the bundle's code was compiled (dist/server.mjs reports it; nothing when run from the sources). */
export type CodeCache = 'hit' | 'miss' | 'rejected';

export async function main(routesFor: (config: Config) => RouteDef[], opts: { codeCache?: CodeCache } = {}): Promise<void> {
  const loadedMs = performance.now();
  // Info lines (one access-log line per request) are written once per event-loop turn rather than one
  // write each; warnings and errors go out at once. Whatever is pending is written before exit.
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const chunk = pending.join('');
    pending = [];
    process.stdout.write(chunk);
  };
  process.on('exit', flush);
  const log = jsonLogger(
    (line) => {
      if (pending.push(`${line}\n`) === 1) setImmediate(flush);
    },
    (line) => {
      flush();
      process.stderr.write(`${line}\n`);
    },
  );

  let loaded;
  try {
    loaded = loadConfig(process.env, process.cwd());
  } catch (e) {
    if (e instanceof ConfigError) {
      log.error('config', { error: e.message });
      process.exit(2);
    }
    throw e;
  }
  const { config, warnings } = loaded;
  for (const w of warnings) log.warn('config', { warning: w });

  const openingMs = performance.now();
  const deps = await openNodeDeps(config, { log });
  const openedMs = performance.now();
  const running = await startServer(deps, routesFor(config));
  const ms = (x: number) => Math.round(x * 10) / 10;
  log.info('listening', {
    url: running.url,
    address: `${config.listenHost ?? '*'}:${running.port}`,
    data_root: config.dataRoot,
    // Since the process started: loading the code, opening the data (database, migrations, recovery), listening.
    boot_ms: { load: ms(loadedMs), open: ms(openedMs - openingMs), total: ms(performance.now()) },
    // From V8's code cache (hit), or compiled because there was none for this bundle (miss) or V8 refused it.
    ...(opts.codeCache ? { code_cache: opts.codeCache } : {}),
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutdown', { signal });
    const force = setTimeout(() => {
      log.error('shutdown', { error: 'in-flight requests did not finish within 25s; exiting' });
      process.exit(1);
    }, 25_000);
    force.unref();
    running.close().then(
      () => process.exit(0),
      (e) => {
        log.error('shutdown', { error: String(e) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
