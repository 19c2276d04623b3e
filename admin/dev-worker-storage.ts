/**
 * Where `npm run dev:worker` (scripts/dev-worker.ts) keeps the hosted build's data on disk, through
 * Miniflare: D1 and the Durable Objects under `$SERVICE_DATA_ROOT/workers/`. The admin command's
 * `--target worker-local` (admin/worker-local.ts) opens the same files, so both read these names from here.
 * Miniflare keys a Durable Object class's files by the Worker's name (none here) and the class name, and a
 * D1 database's by its id, so these must not change once data exists.
 */
import { join } from 'node:path';

/** The D1 database the `DB` binding names. */
export const D1_DATABASE_ID = 'kr';
/** The Durable Object class of the `REPO` binding: one object per repository. */
export const REPO_CLASS = 'RepoObject';
/** The Durable Object class of the `RATE_LIMITER` binding. */
export const RATE_LIMITER_CLASS = 'RateLimiterObject';
/** The class of the per-identity event stream slots (lib/runtime/workers/stream-slots.ts). */
export const STREAM_SLOTS_CLASS = 'StreamSlotsObject';
/** The compatibility date both run workerd with (wrangler.toml has the same). */
export const COMPATIBILITY_DATE = '2025-09-01';

export interface DevWorkerStorage {
  /** `$SERVICE_DATA_ROOT/workers` */
  dir: string;
  d1Persist: string;
  durableObjectsPersist: string;
}

export function devWorkerStorage(dataRoot: string): DevWorkerStorage {
  const dir = join(dataRoot, 'workers');
  return { dir, d1Persist: join(dir, 'd1'), durableObjectsPersist: join(dir, 'do') };
}
