/**
 * Connection options shared by every Redis connection of the module. Reconnects quickly and keeps
 * trying: BullMQ's default backs off to 20 s, which would leave work waiting long after Redis is
 * back.
 */
export function redisConnection(url: string, extra: Record<string, unknown> = {}) {
  return {
    url,
    retryStrategy: (times: number) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
    ...extra,
  };
}
