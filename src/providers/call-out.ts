/**
 * What an unsigned delivery can make the service spend when checking it means calling out (a
 * provider's API, a certificate URL): bounded per sender address, and shared between adapters that
 * call out (docs/security.md#what-an-unsigned-sender-can-make-the-service-spend).
 */

/**
 * Keys remembered for a while: each is forgotten `ttlMs` after it was last added, and past `max`
 * the least recently added first, so a flood of distinct keys holds a bounded amount of memory.
 */
export class ExpiringSet {
  /** Key → when it is forgotten (unix ms), least recently added first. */
  private readonly entries = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly ttlMs: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  add(key: string, nowMs: number): void {
    this.entries.delete(key);
    this.entries.set(key, nowMs + this.ttlMs);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
  }

  has(key: string, nowMs: number): boolean {
    const until = this.entries.get(key);
    if (until === undefined) return false;
    if (until > nowMs) return true;
    this.entries.delete(key);
    return false;
  }
}

/** How much one sender address may make the service call out for ids nobody has vouched for. */
export interface SenderLimits {
  /** Calls one address has unanswered at once (abandoned ones included). */
  inFlight: number;
  /** An address that named more than this many distinct ids answered "not found" within `windowMs` is refused without a call. */
  notFound: number;
  windowMs: number;
  /** Addresses tracked at once; past it, the least recently seen one that has nothing in flight is forgotten. */
  maxSenders: number;
}

interface Sender {
  inFlight: number;
  /** Distinct ids the provider answered "not found" for, with when (oldest first), at most `notFound + 1`. */
  notFound: Map<string, number>;
}

/**
 * Per sender address: the calls it has in flight, and the ids it named that turned out not to
 * exist. A provider's own hints never name ids it does not have, so an address that names many is
 * guessing, and is refused before it costs a call.
 */
export class SenderBudgets {
  private readonly senders = new Map<string, Sender>();

  constructor(readonly limits: SenderLimits) {}

  /** Whether `sender` named more than the limit of not-found ids within the window. */
  limited(sender: string, nowMs: number): boolean {
    const entry = this.senders.get(sender);
    if (!entry) return false;
    this.prune(entry, nowMs);
    return entry.notFound.size > this.limits.notFound;
  }

  /** Takes one call from the sender's budget; false, taking nothing, when it has its share in flight. */
  take(sender: string): boolean {
    const entry = this.touch(sender);
    if (entry.inFlight >= this.limits.inFlight) return false;
    entry.inFlight++;
    return true;
  }

  /** Gives back a call taken with `take`, once the provider answered it (or never will). */
  give(sender: string): void {
    const entry = this.senders.get(sender);
    if (entry && entry.inFlight > 0) entry.inFlight--;
  }

  /** The sender named `id`, which the provider answered "not found" for. */
  notFound(sender: string, id: string, nowMs: number): void {
    const entry = this.touch(sender);
    this.prune(entry, nowMs);
    if (entry.notFound.has(id) || entry.notFound.size > this.limits.notFound) return;
    entry.notFound.set(id, nowMs);
  }

  /** Calls the sender has in flight (for tests and metrics). */
  inFlightOf(sender: string): number {
    return this.senders.get(sender)?.inFlight ?? 0;
  }

  private touch(sender: string): Sender {
    let entry = this.senders.get(sender);
    if (entry) {
      this.senders.delete(sender);
    } else {
      entry = { inFlight: 0, notFound: new Map() };
      this.evict();
    }
    this.senders.set(sender, entry);
    return entry;
  }

  /** Forgets the least recently seen senders past the cap, never one with a call in flight (its give must find it). */
  private evict(): void {
    if (this.senders.size < this.limits.maxSenders) return;
    for (const [address, entry] of this.senders) {
      if (this.senders.size < this.limits.maxSenders) return;
      if (entry.inFlight === 0) this.senders.delete(address);
    }
  }

  private prune(entry: Sender, nowMs: number): void {
    for (const [id, at] of entry.notFound) {
      // A clock set back does not keep an entry for longer than a window either.
      if (nowMs - at < this.limits.windowMs && at <= nowMs + this.limits.windowMs) break;
      entry.notFound.delete(id);
    }
  }
}
