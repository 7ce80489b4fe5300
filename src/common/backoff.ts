/**
 * The retry delay of carrier calls (and of event deliveries, which follow them): attempt n
 * waits at least base·2^(n−1), plus up to half of it again at random so that messages failing
 * together do not retry together; never more than the cap. A `Retry-After` from the other side is
 * honoured, under the same cap.
 */
export function retryDelayMs(attempts: number, baseMs: number, capMs: number, retryAfterMs?: number): number {
  const nominal = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempts, 1) - 1, 30));
  const delay = nominal * (1 + Math.random() / 2);
  return Math.min(capMs, Math.max(delay, retryAfterMs ?? 0));
}
