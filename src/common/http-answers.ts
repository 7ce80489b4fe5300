/**
 * How the module reads the answer of a service it calls (a carrier, an event sink):
 * these statuses are worth a retry, as a 5xx is; any other 4xx will not change.
 */
export const RETRYABLE_4XX: ReadonlySet<number> = new Set([408, 425, 429]);

export function isRetryableStatus(status: number): boolean {
  return status >= 500 || RETRYABLE_4XX.has(status);
}

/** `Retry-After` in seconds or as an HTTP date, in milliseconds from now. */
export function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
