import type Stripe from 'stripe';
import { retryDelayMs } from '../../common/backoff';
import { AnswerTooLarge } from '../../common/bounded-answer';
import { DEFAULT_STRIPE_API, stripeClient, withoutKey } from '../../providers/stripe-api';

export { DEFAULT_STRIPE_API } from '../../providers/stripe-api';

/** Events per page: Stripe's maximum, so a window takes the fewest calls. */
export const PAGE_LIMIT = 100;

/** Retries the client makes itself: 5xx, 409, connection errors, and whatever Stripe marks `Stripe-Should-Retry: true`. */
const CLIENT_RETRIES = 3;
/**
 * The client leaves a bare 429 to its caller (stripe-node's RequestSender._shouldRetry retries only
 * 409, ≥ 500 and `Stripe-Should-Retry: true`), so a rate-limited page is asked again here, with backoff.
 */
const RATE_LIMIT_RETRIES = 6;
const RATE_LIMIT_BASE_MS = 500;
const RATE_LIMIT_CAP_MS = 10_000;
const TIMEOUT_MS = 30_000;
/**
 * The most bytes of one page of events ever read: 100 events of Stripe's (each object as it is on
 * the API, a few KiB, an invoice with many lines some hundreds) fit many times over. Past it the
 * download is cancelled and the backfill ends `failed`, rather than this process holding whatever
 * a misbehaving API (or whatever answers at `apiBaseUrl`) sends.
 */
export const PAGE_READ_LIMIT_BYTES = 32 * 1024 * 1024;

export interface EventsPage {
  /** As the API listed them, unchecked: the backfill refuses those the webhook route would. */
  events: unknown[];
  hasMore: boolean;
}

/** An answer from the API that ends the backfill (`failed` with this message). Never holds the key. */
export class EventsApiError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EventsApiError';
  }
}

/** Reads Stripe's Events API for one endpoint with the official client (docs/operations.md#backfill). */
export class StripeEventsClient {
  private readonly stripe: Stripe;

  constructor(
    private readonly apiKey: string,
    apiBaseUrl: string = DEFAULT_STRIPE_API,
    readLimitBytes: number = PAGE_READ_LIMIT_BYTES,
  ) {
    this.stripe = stripeClient(apiKey, apiBaseUrl, {
      maxNetworkRetries: CLIENT_RETRIES,
      timeoutMs: TIMEOUT_MS,
      readLimitBytes: readLimitBytes,
      appName: 'backfill',
    });
  }

  /**
   * One page of events created in [since, until), newest first, after `startingAfter`; on a
   * connected account with `Stripe-Account`. Any error left once the retries are spent is an
   * EventsApiError with Stripe's message (401/403 too), the key scrubbed from it.
   */
  async page(sinceSeconds: number, untilSeconds: number, startingAfter: string | null, account: string | null): Promise<EventsPage> {
    for (let attempt = 1; ; attempt++) {
      try {
        const list = await this.stripe.events.list(
          {
            created: { gte: sinceSeconds, lt: untilSeconds },
            limit: PAGE_LIMIT,
            ...(startingAfter ? { starting_after: startingAfter } : {}),
          },
          account ? { stripeAccount: account } : undefined,
        );
        return { events: Array.isArray(list.data) ? list.data : [], hasMore: list.has_more === true };
      } catch (err) {
        const status = (err as { statusCode?: number }).statusCode;
        if (status === 429 && attempt <= RATE_LIMIT_RETRIES) {
          await new Promise((r) => setTimeout(r, retryDelayMs(attempt, RATE_LIMIT_BASE_MS, RATE_LIMIT_CAP_MS)));
          continue;
        }
        const cause = (err as { detail?: { exception?: unknown } }).detail?.exception;
        if (cause instanceof AnswerTooLarge) throw new EventsApiError(`Stripe events API: a page of events: ${cause.message}`);
        throw new EventsApiError(this.describe(err, status));
      }
    }
  }

  private describe(err: unknown, status: number | undefined): string {
    const message = (err as Error)?.message || String(err);
    const text = `Stripe events API${status ? ` answered ${status}` : ' failed'}: ${message}`;
    // Stripe names a key by its last four characters only; never let the whole key through.
    return withoutKey(text, this.apiKey);
  }
}
