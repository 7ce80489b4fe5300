/**
 * Ingest before drain: in a process that both receives webhooks and runs the workers, the workers
 * give way while deliveries are being received (a sender times out in 10 s, and a 503 is a retry):
 * while any delivery is in flight, at most `busySlots` jobs run at once; when none is, every worker
 * slot does. A job never waits longer than `maxYieldMs` for a slot, so a steady stream of
 * deliveries slows the drain, never stops it.
 */
export class ReceivePressure {
  private receiving = 0;
  private running = 0;
  private readonly waiters: Array<{ grant: () => void; timer: NodeJS.Timeout }> = [];

  constructor(
    private readonly busySlots: number,
    private readonly maxYieldMs: number,
  ) {}

  /** Deliveries being received now, and jobs running now (for tests and metrics). */
  get state(): { receiving: number; running: number; waiting: number } {
    return { receiving: this.receiving, running: this.running, waiting: this.waiters.length };
  }

  /** A delivery began (the receive path); call the returned function when its answer has gone out. */
  receive(): () => void {
    this.receiving++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.receiving--;
      this.wake();
    };
  }

  /** Waits for a slot; the returned function gives it back. */
  async slot(): Promise<() => void> {
    if (this.mayRun()) {
      this.running++;
    } else {
      await new Promise<void>((resolve) => {
        const entry = {
          // Whoever resolves the wait counts the slot as taken, so no more are granted than allowed.
          grant: () => {
            clearTimeout(entry.timer);
            this.running++;
            resolve();
          },
          timer: setTimeout(() => {
            const i = this.waiters.indexOf(entry);
            if (i >= 0) this.waiters.splice(i, 1);
            this.running++;
            resolve();
          }, this.maxYieldMs),
        };
        entry.timer.unref();
        this.waiters.push(entry);
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      this.wake();
    };
  }

  private mayRun(): boolean {
    return this.receiving === 0 || this.running < this.busySlots;
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.mayRun()) this.waiters.shift()!.grant();
  }
}
