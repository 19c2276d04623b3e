/**
 * The work budget of one request. Every diff, rename pass and blame walk computed for one request (a diff
 * endpoint call, or an evolution call with its up to 200 diffs) charges one shared {@link WorkBudget}, so no
 * request can do more than {@link REQUEST_WORK_UNITS} units of work however large the page or long its
 * history. When the budget is spent the answers get coarser, never wrong, and say `truncated: true`:
 * line diffs become whole-block replacements, rename detection is skipped, blame is abandoned (the plain
 * diff), evolution stops adding entries.
 *
 * A unit is a count, not a clock, so where a request is cut is deterministic. It stands for roughly 10 to
 * 25 ns of work on a current core; REQUEST_WORK_UNITS is then about one to two seconds. What is charged:
 *  - parsing a revision that was not cached: 1 per character (reading and inflating the blob included);
 *  - one section entry of a SectionDiff: {@link ENTRY_UNITS} plus 1 per character of its two bodies
 *    (splitting, comparing and writing the line diff), plus Myers' D·(D+N) when the bodies differ in their
 *    middle (./line.ts);
 *  - rename detection: 1 per character tokenized, 1 per candidate pair looked at, and the size of the
 *    smaller token set per pair compared (./rename.ts);
 *  - blame: {@link BLAME_UNITS_PER_HEADING} per heading of every revision walked, and 1 per entry annotated.
 *
 * Long loops also hand the event loop a turn every {@link YIELD_EVERY_UNITS} units (when driven
 * asynchronously), so other requests — `/health` among them — are answered meanwhile. The turn is a
 * macrotask (setImmediate where it exists, else setTimeout 0), web-standard enough for Workers.
 */

/** Units one request may spend (see the module comment). */
export const REQUEST_WORK_UNITS = 64_000_000;
/** Units of work between two turns handed to the event loop (a few milliseconds). */
export const YIELD_EVERY_UNITS = 200_000;
/** Fixed cost of one section entry, on top of its characters. */
export const ENTRY_UNITS = 64;
/** Cost of one heading of one revision in a blame walk. */
export const BLAME_UNITS_PER_HEADING = 12;

export class WorkBudget {
  private left: number;
  private sinceTurn = 0;
  /** Units charged so far (also past the end). */
  spent = 0;

  constructor(
    readonly units: number = REQUEST_WORK_UNITS,
    readonly yieldEvery: number = YIELD_EVERY_UNITS,
  ) {
    this.left = units;
  }

  /** A budget that never runs out and never asks for a turn: the synchronous, local uses of the differ. */
  static unlimited(): WorkBudget {
    return new WorkBudget(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
  }

  /** Units left (0 once spent). */
  get remaining(): number {
    return this.left > 0 ? this.left : 0;
  }

  get exhausted(): boolean {
    return this.left <= 0;
  }

  charge(units: number): void {
    if (!(units > 0)) return;
    this.left -= units;
    this.spent += units;
    this.sinceTurn += units;
  }

  /**
   * Whether a long loop should give the event loop a turn now ({@link YIELD_EVERY_UNITS} charged since the
   * last one); answering true starts the count again.
   */
  turnDue(): boolean {
    if (this.sinceTurn < this.yieldEvery) return false;
    this.sinceTurn = 0;
    return true;
  }

  /** Gives the event loop a turn when one is due; resolves at once otherwise. */
  async pause(): Promise<void> {
    if (this.turnDue()) await nextTurn();
  }
}

/** Thrown (and caught inside this service) when a walk must stop because the budget is spent. */
export class BudgetExhausted extends Error {
  constructor(what: string) {
    super(`work budget exhausted: ${what}`);
    this.name = 'BudgetExhausted';
  }
}

type Immediate = (f: () => void) => unknown;
const immediate = (globalThis as { setImmediate?: Immediate }).setImmediate;

/** One macrotask turn of the event loop: pending I/O (other requests) runs before this resolves. */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    if (typeof immediate === 'function') immediate(resolve);
    else setTimeout(resolve, 0);
  });
}

/**
 * A computation in steps: a generator that yields (nothing) where it may pause, and returns its result.
 * The differ's loops are written once this way and driven either synchronously ({@link runSteps}: the
 * command-line client, tests) or with event-loop turns ({@link runStepsAsync}: the server).
 */
export type Steps<T> = Generator<void, T, void>;

export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

export async function runStepsAsync<T>(steps: Steps<T>): Promise<T> {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await nextTurn();
  }
}
