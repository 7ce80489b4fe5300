/**
 * What one process saw of each endpoint's deliveries since its last flush
 * (docs/operations.md#endpoint-health): kept in memory so that the receive path pays a few
 * increments per delivery and no statement; a flush takes the tallies and adds them to the
 * database, where the tallies of every process add up.
 */

/** How a delivery counts: `accepted` (a new event recorded), `duplicate` (every event recorded before), `refused` (answered 4xx). */
export type DeliveryCount = 'accepted' | 'duplicate' | 'refused';

export interface HourCounts {
  accepted: number;
  duplicate: number;
  refused: number;
}

/** One endpoint's tally: instants are unix milliseconds. */
export interface EndpointTally {
  endpointId: string;
  /** The last delivery, whatever its answer. */
  lastDeliveryAt: number | null;
  /** The last delivery answered `accepted` or `duplicate` (authentic and recorded). */
  lastAuthenticAt: number | null;
  /** Per configured secret index, the last delivery it verified. */
  secretsMatched: Map<number, number>;
  /** Per hour (its start, unix ms), the deliveries counted. */
  hours: Map<number, HourCounts>;
}

const HOUR_MS = 3_600_000;

/** The count of a delivery from its answer: the receive path's answer code, and the HTTP status. */
export function countOf(answer: string, status: number): DeliveryCount | null {
  if (answer === 'accepted' || answer === 'duplicate') return answer;
  // Refused for good (a signature, a timestamp, a body, a size); a 5xx is transient, not a refusal.
  if (status >= 400 && status < 500) return 'refused';
  return null;
}

export class EndpointTallies {
  private tallies = new Map<string, EndpointTally>();

  /** A delivery to `endpointId` answered at `atMs`, counted as `count` (null: only its time is kept). */
  delivered(endpointId: string, count: DeliveryCount | null, atMs: number): void {
    const tally = this.of(endpointId);
    tally.lastDeliveryAt = Math.max(tally.lastDeliveryAt ?? atMs, atMs);
    if (count === null) return;
    if (count !== 'refused') tally.lastAuthenticAt = Math.max(tally.lastAuthenticAt ?? atMs, atMs);
    const hour = atMs - (atMs % HOUR_MS);
    let counts = tally.hours.get(hour);
    if (!counts) tally.hours.set(hour, (counts = { accepted: 0, duplicate: 0, refused: 0 }));
    counts[count]++;
  }

  /** A delivery to `endpointId` verified with its secret `index` at `atMs`. */
  secretMatched(endpointId: string, index: number, atMs: number): void {
    const matched = this.of(endpointId).secretsMatched;
    matched.set(index, Math.max(matched.get(index) ?? atMs, atMs));
  }

  /** Whether anything was counted since the last take. */
  get isEmpty(): boolean {
    return this.tallies.size === 0;
  }

  /** Everything counted so far, handed over; the tallies start again from nothing. */
  take(): EndpointTally[] {
    const taken = [...this.tallies.values()];
    this.tallies = new Map();
    return taken;
  }

  /** Tallies a flush could not write, added back to what was counted since. */
  putBack(taken: readonly EndpointTally[]): void {
    for (const old of taken) {
      const tally = this.of(old.endpointId);
      tally.lastDeliveryAt = latest(tally.lastDeliveryAt, old.lastDeliveryAt);
      tally.lastAuthenticAt = latest(tally.lastAuthenticAt, old.lastAuthenticAt);
      for (const [index, at] of old.secretsMatched) tally.secretsMatched.set(index, Math.max(tally.secretsMatched.get(index) ?? at, at));
      for (const [hour, counts] of old.hours) {
        const now = tally.hours.get(hour);
        if (!now) tally.hours.set(hour, { ...counts });
        else {
          now.accepted += counts.accepted;
          now.duplicate += counts.duplicate;
          now.refused += counts.refused;
        }
      }
    }
  }

  private of(endpointId: string): EndpointTally {
    let tally = this.tallies.get(endpointId);
    if (!tally) {
      tally = { endpointId, lastDeliveryAt: null, lastAuthenticAt: null, secretsMatched: new Map(), hours: new Map() };
      this.tallies.set(endpointId, tally);
    }
    return tally;
  }
}

function latest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}
