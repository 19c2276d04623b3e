/** Injected time source: every timestamp the service stores comes from here, never from SQL. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Whole Unix seconds from a clock. */
export const unixSeconds = (clock: Clock): number => Math.floor(clock.now() / 1000);

/** A clock tests can move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
