/**
 * Coalesces concurrent calls into batches, so a burst of N requests costs a few statements
 * instead of N (group commit at the application level). Calls made in the same event-loop turn
 * share a batch; while `maxInFlight` batches are running, new calls wait and form the next one.
 * At low load every call is flushed on the next turn, alone: no added latency.
 */
export class MicroBatcher<In, Out> {
  private pending: Array<{ input: In; resolve: (out: Out) => void; reject: (err: unknown) => void }> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    /** Runs one batch; returns one result per input, in order. A throw fails every call of the batch. */
    private readonly flush: (inputs: In[]) => Promise<Out[]>,
    private readonly maxBatch: number,
    private readonly maxInFlight: number,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.drain();
        });
      }
    });
  }

  private drain(): void {
    while (this.pending.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.pending.splice(0, this.maxBatch);
      this.inFlight++;
      // Through a promise, so even a flush that throws synchronously settles its batch.
      Promise.resolve()
        .then(() => this.flush(batch.map((entry) => entry.input)))
        .then((outputs) => {
          if (outputs.length !== batch.length) {
            throw new Error(`batch flush returned ${outputs.length} results for ${batch.length} inputs`);
          }
          batch.forEach((entry, i) => entry.resolve(outputs[i]));
        })
        .catch((err) => batch.forEach((entry) => entry.reject(err)))
        .finally(() => {
          this.inFlight--;
          this.drain();
        });
    }
  }
}
