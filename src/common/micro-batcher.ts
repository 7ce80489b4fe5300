/**
 * Coalesces concurrent calls into batches, so a burst of N requests costs a few statements
 * instead of N (group commit at the application level). Calls made in the same event-loop turn
 * share a batch; while `maxInFlight` batches are running, new calls wait and form the next one.
 * At low load every call is flushed on the next turn, alone: no added latency.
 */
export interface MicroBatcherOptions<In> {
  /** Most calls in one batch. */
  maxBatch: number;
  /**
   * Batches running at once: a number, or asked each time a batch could start, given how long the
   * oldest running batch has run (ms; 0 when none runs), and, while calls wait behind running
   * batches, again every `recheckMs`, since the answer may change with time.
   */
  maxInFlight: number | ((oldestRunningMs: number) => number);
  recheckMs?: number;
  /** A call still waiting for its batch after this long fails (its caller answers at once, not late). */
  maxWaitMs?: number;
  /** The size of a call, and the most a batch may hold (a batch always takes at least one call). */
  weigh?: (input: In) => number;
  maxWeight?: number;
}

/** The error a call gets when it waited longer than `maxWaitMs` for its batch. */
export class BatchWaitTimeout extends Error {
  constructor(waitedMs: number) {
    super(`waited ${waitedMs} ms for a batch`);
    this.name = 'BatchWaitTimeout';
  }
}

/**
 * One call's failure inside a batch that as a whole went through: a flush returns it in that call's
 * place, and only that call rejects, with `error`. A class of the module's own: `instanceof Error`
 * fails across realms (Jest's vm), and an error value may be anything.
 */
export class ItemFailed {
  constructor(readonly error: unknown) {}

  get message(): string {
    return (this.error as Error)?.message ?? String(this.error);
  }
}

interface Pending<In, Out> {
  input: In;
  since: number;
  resolve: (out: Out) => void;
  reject: (err: unknown) => void;
}

export class MicroBatcher<In, Out> {
  private pending: Array<Pending<In, Out>> = [];
  /** When each running batch started (performance.now()), oldest first: as many as run. */
  private readonly started: number[] = [];
  private scheduled = false;
  /** One timer at a time while calls wait, so a call past its wait fails even if nothing else happens. */
  private expiry: NodeJS.Timeout | undefined;
  private recheck: NodeJS.Timeout | undefined;

  constructor(
    /**
     * Runs one batch; returns one result per input, in order, or an ItemFailed for a call that
     * failed alone. A throw fails every call of the batch.
     */
    private readonly flush: (inputs: In[]) => Promise<Array<Out | ItemFailed>>,
    private readonly options: MicroBatcherOptions<In>,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, since: Date.now(), resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.drain();
        });
      }
    });
  }

  private expire(): void {
    const { maxWaitMs } = this.options;
    if (maxWaitMs === undefined || this.pending.length === 0) return;
    const now = Date.now();
    this.pending = this.pending.filter((entry) => {
      if (now - entry.since <= maxWaitMs) return true;
      entry.reject(new BatchWaitTimeout(now - entry.since));
      return false;
    });
  }

  private watchWaits(): void {
    const { maxWaitMs } = this.options;
    if (maxWaitMs === undefined || this.expiry || this.pending.length === 0) return;
    const due = Math.max(0, this.pending[0].since + maxWaitMs + 1 - Date.now());
    this.expiry = setTimeout(() => {
      this.expiry = undefined;
      this.expire();
      this.watchWaits();
    }, due);
    this.expiry.unref();
  }

  private drain(): void {
    const { maxBatch, weigh, maxWeight } = this.options;
    const limit = this.options.maxInFlight;
    this.expire();
    const allowed = () => Math.max(1, typeof limit === 'number' ? limit : limit(this.started.length > 0 ? performance.now() - this.started[0] : 0));
    while (this.pending.length > 0 && this.started.length < allowed()) {
      let take = Math.min(maxBatch, this.pending.length);
      if (weigh && maxWeight !== undefined) {
        let weight = 0;
        for (let i = 0; i < take; i++) {
          weight += weigh(this.pending[i].input);
          if (weight > maxWeight && i > 0) {
            take = i;
            break;
          }
        }
      }
      const batch = this.pending.splice(0, take);
      const startedAt = performance.now();
      this.started.push(startedAt);
      // Through a promise, so even a flush that throws synchronously settles its batch.
      Promise.resolve()
        .then(() => this.flush(batch.map((entry) => entry.input)))
        .then((outputs) => {
          if (outputs.length !== batch.length) {
            throw new Error(`batch flush returned ${outputs.length} results for ${batch.length} inputs`);
          }
          batch.forEach((entry, i) => {
            const output = outputs[i];
            if (output instanceof ItemFailed) entry.reject(output.error);
            else entry.resolve(output);
          });
        })
        .catch((err) => batch.forEach((entry) => entry.reject(err)))
        .finally(() => {
          this.started.splice(this.started.indexOf(startedAt), 1);
          this.drain();
        });
    }
    this.watchWaits();
    if (typeof limit === 'function' && this.pending.length > 0 && !this.recheck) {
      this.recheck = setTimeout(() => {
        this.recheck = undefined;
        this.drain();
      }, this.options.recheckMs ?? 50);
      this.recheck.unref();
    }
  }
}
