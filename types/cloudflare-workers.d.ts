/**
 * The little of `cloudflare:workers` that lib/http/rate-limit-do.ts uses, for the Node type-check only
 * (tsconfig.json: this folder). @cloudflare/workers-types declares the real module, but only with its
 * global Workers types, which clash with the DOM and Node types of this build; a Workers type-check uses
 * those instead and leaves this folder out.
 */
declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected ctx: DurableObjectState;
    protected env: Env;
    constructor(ctx: DurableObjectState, env: Env);
    alarm?(): void | Promise<void>;
    fetch?(request: Request): Response | Promise<Response>;
  }
}

interface DurableObjectState {
  readonly storage: DurableObjectStorage;
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T>;
}

interface DurableObjectStorage {
  get<T = unknown>(key: string): Promise<T | undefined>;
  list<T = unknown>(): Promise<Map<string, T>>;
  put<T>(key: string, value: T): Promise<void>;
  delete(key: string): Promise<boolean>;
  deleteAll(): Promise<void>;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number | Date): Promise<void>;
}
