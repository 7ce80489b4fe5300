/** How the HTTP side's lag is read: a timer of this period, and how late it fires. */
const LAG_PROBE_MS = 10;

/**
 * Ingest before drain: in a process that both receives webhooks and runs the workers, the workers
 * give way when the receive path is behind (a sender times out in 10 s, and a 503 is a retry), and
 * only then. It is behind while `backlog` deliveries or more are in flight at once, or while the
 * event loop runs `maxLagMs` or more late (the answers wait for it); then at most `busySlots` jobs
 * run at once. Otherwise every worker slot does: a steady trickle of deliveries, each answered at
 * once, costs the workers nothing. A job never waits longer than `maxYieldMs` for a slot, so a
 * flood slows the drain, never stops it.
 */
export class ReceivePressure {
  private receiving = 0;
  private running = 0;
  private receivedAny = false;
  private readonly waiters: Array<{ grant: () => void; timer: NodeJS.Timeout }> = [];
  /** How late the lag probe last fired (ms), while deliveries are in flight. */
  private lagMs = 0;
  private probe: NodeJS.Timeout | undefined;
  private probeDue = 0;

  constructor(
    private readonly busySlots: number,
    private readonly maxYieldMs: number,
    private readonly backlog = 1,
    private readonly maxLagMs = Number.POSITIVE_INFINITY,
    /** The lag probe's clock (ms; a test's own). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Deliveries being received now, jobs running now and waiting (for tests and metrics). */
  get state(): { receiving: number; running: number; waiting: number } {
    return { receiving: this.receiving, running: this.running, waiting: this.waiters.length };
  }

  /** Whether the receive path is behind now (deliveries piling up, or the event loop late). */
  get behind(): boolean {
    return this.receiving > 0 && (this.receiving >= this.backlog || this.lagMs >= this.maxLagMs);
  }

  /**
   * Whether this process receives webhooks (it has received one): then its workers share the event
   * loop with the HTTP side. A worker-only process never does.
   */
  get receivesHere(): boolean {
    return this.receivedAny;
  }

  /** A delivery began (the receive path); call the returned function when its answer has gone out. */
  receive(): () => void {
    this.receivedAny = true;
    this.receiving++;
    this.watchLag();
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
    return this.running < this.busySlots || !this.behind;
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.mayRun()) this.waiters.shift()!.grant();
  }

  /**
   * Reads the event loop's lag while deliveries are in flight: a timer that should fire every
   * LAG_PROBE_MS, and how late it did. Stops once nothing is being received (and forgets the lag).
   */
  private watchLag(): void {
    if (this.probe || !Number.isFinite(this.maxLagMs)) return;
    this.probeDue = this.now() + LAG_PROBE_MS;
    this.probe = setInterval(() => {
      const now = this.now();
      this.lagMs = Math.max(0, now - this.probeDue);
      this.probeDue = now + LAG_PROBE_MS;
      if (this.receiving === 0) {
        clearInterval(this.probe);
        this.probe = undefined;
        this.lagMs = 0;
      }
      this.wake();
    }, LAG_PROBE_MS);
    this.probe.unref();
  }
}
