/**
 * What an unsigned delivery can make the service spend when checking it means calling out (a
 * provider's API, a certificate URL): bounded per sender address, and shared between adapters that
 * call out (docs/security.md#what-an-unsigned-sender-can-make-the-service-spend).
 */

/**
 * Keys remembered for a while, each with a value: each is forgotten `ttlMs` after it was last set,
 * and past `max` the least recently set first, so a flood of distinct keys holds a bounded amount
 * of memory. Entries are kept in the order they were set and share one time-to-live, so the
 * expired ones are always at the front: each `set` drops them there, and memory follows what is
 * live rather than the most ever held.
 */
export class ExpiringMap<V> {
  /** Key → its value and when it is forgotten (unix ms), least recently set first. */
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly max: number,
    private readonly ttlMs: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  set(key: string, value: V, nowMs: number): void {
    this.dropExpired(nowMs);
    this.entries.delete(key);
    this.entries.set(key, { value, until: nowMs + this.ttlMs });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
  }

  get(key: string, nowMs: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.until > nowMs) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  private dropExpired(nowMs: number): void {
    for (const [key, entry] of this.entries) {
      if (entry.until > nowMs) return;
      this.entries.delete(key);
    }
  }
}

/** Keys remembered for a while (an ExpiringMap without values). */
export class ExpiringSet {
  private readonly keys: ExpiringMap<true>;

  constructor(max: number, ttlMs: number) {
    this.keys = new ExpiringMap(max, ttlMs);
  }

  get size(): number {
    return this.keys.size;
  }

  add(key: string, nowMs: number): void {
    this.keys.set(key, true, nowMs);
  }

  has(key: string, nowMs: number): boolean {
    return this.keys.get(key, nowMs) !== undefined;
  }
}

/** How much one sender address may make the service call out. */
export interface SenderLimits {
  /** Calls for ids nobody has vouched for that one address has unanswered at once (abandoned ones included). */
  inFlight: number;
  /** Calls for ids the service knows that one address has unanswered at once. */
  knownInFlight: number;
  /** Questions to the service (whether it knows an id) one address has unanswered at once. */
  lookups: number;
  /** An address that named more than this many distinct ids answered "not found" within `windowMs` is refused without a call. */
  notFound: number;
  windowMs: number;
  /** Addresses tracked at once; past it, the least recently seen one that has nothing in flight is forgotten. */
  maxSenders: number;
}

/** The two lanes of calls: for ids the service knows, and for any other id. */
export type Lane = 'known' | 'unknown';

interface Sender {
  /** Calls unanswered, per lane, and questions to the service unanswered. */
  known: number;
  unknown: number;
  lookups: number;
  /**
   * Distinct ids the provider answered "not found" for, with when (oldest first). Every one is kept,
   * those that were in flight when the address passed its limit too, so that the count falls back
   * under the limit only once the window has passed over all of them: at most `notFound +
   * inFlight` are held.
   */
  notFound: Map<string, number>;
}

/**
 * Per sender address: the calls and questions it has in flight, and the ids it named that turned
 * out not to exist. A provider's own hints never name ids it does not have, so an address that
 * names many is guessing, and is refused before it costs a call.
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

  /** Whether the sender may start one more call in `lane` now (nothing is taken). */
  hasRoom(sender: string, lane: Lane): boolean {
    const entry = this.senders.get(sender);
    return (entry?.[lane] ?? 0) < (lane === 'known' ? this.limits.knownInFlight : this.limits.inFlight);
  }

  /** Takes one call in `lane` from the sender's budget; false, taking nothing, when it has its share in flight. */
  take(sender: string, lane: Lane): boolean {
    if (!this.hasRoom(sender, lane)) return false;
    this.touch(sender)[lane]++;
    return true;
  }

  /** Gives back a call taken with `take`, once the provider answered it (or is given up on). */
  give(sender: string, lane: Lane): void {
    const entry = this.senders.get(sender);
    if (entry && entry[lane] > 0) entry[lane]--;
  }

  /** Takes one question to the service; false when the sender has its share of them unanswered. */
  takeLookup(sender: string): boolean {
    const entry = this.touch(sender);
    if (entry.lookups >= this.limits.lookups) return false;
    entry.lookups++;
    return true;
  }

  giveLookup(sender: string): void {
    const entry = this.senders.get(sender);
    if (entry && entry.lookups > 0) entry.lookups--;
  }

  /**
   * The sender named `id`, which the provider answered "not found" for. True when this is what took
   * the sender past its limit (a caller may say so, once).
   */
  notFound(sender: string, id: string, nowMs: number): boolean {
    const entry = this.touch(sender);
    this.prune(entry, nowMs);
    if (entry.notFound.has(id) || entry.notFound.size >= this.limits.notFound + this.limits.inFlight) return false;
    entry.notFound.set(id, nowMs);
    return entry.notFound.size === this.limits.notFound + 1;
  }

  /** Calls the sender has in flight in `lane` (for tests and metrics). */
  inFlightOf(sender: string, lane: Lane = 'unknown'): number {
    return this.senders.get(sender)?.[lane] ?? 0;
  }

  private touch(sender: string): Sender {
    let entry = this.senders.get(sender);
    if (entry) {
      this.senders.delete(sender);
    } else {
      entry = { known: 0, unknown: 0, lookups: 0, notFound: new Map() };
      this.evict();
    }
    this.senders.set(sender, entry);
    return entry;
  }

  /** Forgets the least recently seen senders past the cap, never one with anything in flight (its give must find it). */
  private evict(): void {
    if (this.senders.size < this.limits.maxSenders) return;
    for (const [address, entry] of this.senders) {
      if (this.senders.size < this.limits.maxSenders) return;
      if (entry.known === 0 && entry.unknown === 0 && entry.lookups === 0) this.senders.delete(address);
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
