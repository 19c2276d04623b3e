/**
 * The little of the Workers runtime that the hosted build's own code touches (worker.ts, the Durable
 * Object classes in lib/runtime/workers/repo-object.ts, rate-limiter.ts and stream-slots.ts), for the Node type-check only
 * (tsconfig.json: this folder). @cloudflare/workers-types declares the real module, but only with its
 * global Workers types, which clash with the DOM and Node types of this build.
 */
declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected ctx: DurableObjectState;
    protected env: Env;
    constructor(ctx: DurableObjectState, env: Env);
    alarm?(): void | Promise<void>;
    fetch?(request: Request): Response | Promise<Response>;
  }
  export type { DurableObjectState, DurableObjectStorage };
}

interface DurableObjectState {
  readonly id: { toString(): string; readonly name?: string };
  readonly storage: DurableObjectStorage;
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T>;
}

interface SqlStorageCursor {
  toArray(): Array<Record<string, unknown>>;
  readonly rowsWritten: number;
  readonly rowsRead: number;
}

interface DurableObjectStorage {
  readonly sql: { exec(query: string, ...bindings: unknown[]): SqlStorageCursor };
  transactionSync<T>(fn: () => T): T;
  get<T = unknown>(key: string): Promise<T | undefined>;
  list<T = unknown>(options?: { prefix?: string }): Promise<Map<string, T>>;
  put<T>(key: string, value: T): Promise<void>;
  put<T>(entries: Record<string, T>): Promise<void>;
  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  deleteAll(): Promise<void>;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number | Date): Promise<void>;
  deleteAlarm(): Promise<void>;
}

/** Migrations are bundled as text (esbuild's and wrangler's Text loader for `.sql`). */
declare module '*.sql' {
  const text: string;
  export default text;
}
