/**
 * A call's outcome, settled once. Whoever ends the call (the proxy answering, failing over,
 * giving up on a parked ticket; the route refusing it) reports here; the first report is the
 * call's record and goes to the call log, the quotas and the metrics; a later one is a bug
 * somewhere on the call's path and is dropped, handed to `onRepeat` so it gets heard. Pure.
 */
import type { CallOutcome } from './call-outcome.ts';

export class OutcomeOnce {
  private first: CallOutcome | undefined;

  constructor(
    private readonly record: (outcome: CallOutcome) => void,
    private readonly onRepeat: (first: CallOutcome, again: CallOutcome) => void,
  ) {}

  /** Whether the call has its outcome. */
  get settled(): boolean {
    return this.first !== undefined;
  }

  /** Records `outcome` if it is the call's first; true when it was. */
  settle(outcome: CallOutcome): boolean {
    const first = this.first;
    if (first !== undefined) {
      this.onRepeat(first, outcome);
      return false;
    }
    this.first = outcome; // before recording: a record that throws is not retried by a second report
    this.record(outcome);
    return true;
  }
}
