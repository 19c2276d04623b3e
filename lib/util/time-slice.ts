import { nextTurn } from '../core/differ/budget.ts';

/**
 * Long loops on the event loop, in slices: a loop asks `due` as it goes and, when its slice is used up,
 * hands the event loop a turn (`next`) so that other requests — `/health` among them — are answered
 * before it goes on. A slice ends after SLICE_MS of work or SLICE_STEPS checks, whichever comes first: on
 * workerd the clock does not move while code runs, so there the count is what ends it.
 */

/** Work between two turns handed to the event loop (ms). */
export const SLICE_MS = 8;
/** Checks between two turns at most, whatever the clock says. */
export const SLICE_STEPS = 4096;

export class TimeSlice {
  private started = performance.now();
  private steps = 0;

  constructor(
    private readonly ms = SLICE_MS,
    private readonly maxSteps = SLICE_STEPS,
  ) {}

  /** Whether the slice is used up (counts one step). */
  get due(): boolean {
    return ++this.steps >= this.maxSteps || performance.now() - this.started >= this.ms;
  }

  /** A turn of the event loop, then a new slice. */
  async next(): Promise<void> {
    await nextTurn();
    this.started = performance.now();
    this.steps = 0;
  }

  /** `next` when the slice is used up; at once otherwise. */
  async turn(): Promise<void> {
    if (this.due) await this.next();
  }
}
