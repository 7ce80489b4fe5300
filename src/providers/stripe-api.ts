import Stripe from 'stripe';
import { boundedFetch } from '../common/bounded-answer';

import type { ProviderEndpoint } from './provider';

/** Stripe's own API, where an endpoint names no `apiBaseUrl` (docs/configuration.md#webhook-endpoints). */
export const DEFAULT_STRIPE_API = 'https://api.stripe.com';

export interface StripeClientOptions {
  /** Retries the client makes itself (5xx, 409, connection errors, `Stripe-Should-Retry: true`). */
  maxNetworkRetries: number;
  timeoutMs: number;
  /** The most bytes of one answer ever read: past it the download is cancelled (AnswerTooLarge). */
  readLimitBytes: number;
  /** What the module says it is in Stripe's `User-Agent` (`nestjs-payment-webhooks <appName>`). */
  appName: string;
}

/**
 * The official client for one endpoint's key and base URL (a local stub in tests, Stripe's API in
 * production), with the module's bounds: its own timeout, a bounded read, no telemetry.
 */
export function stripeClient(apiKey: string, apiBaseUrl: string = DEFAULT_STRIPE_API, options: StripeClientOptions): Stripe {
  const base = new URL(apiBaseUrl);
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(apiKey, {
    host: base.hostname,
    port: base.port || (protocol === 'http' ? 80 : 443),
    protocol,
    maxNetworkRetries: options.maxNetworkRetries,
    timeout: options.timeoutMs,
    telemetry: false,
    httpClient: Stripe.createFetchHttpClient(boundedFetch(options.readLimitBytes)),
    appInfo: { name: `nestjs-payment-webhooks ${options.appName}` },
  });
}

/** Each endpoint's clients, one per use (`appName`), kept while its key and base URL stay the same. */
const endpointClients = new WeakMap<ProviderEndpoint, Map<string, { apiKey: string; apiBaseUrl: string | undefined; client: Stripe }>>();

/**
 * The official client of one endpoint for one use (the commands, polling, thin notifications),
 * built once and kept: the client keeps its connections alive, and what differs per call (a timeout,
 * an idempotency key, a connected account) goes in the request's options. A changed key or base URL
 * makes a new one.
 */
export function endpointStripeClient(endpoint: ProviderEndpoint & { apiKey: string }, options: StripeClientOptions): Stripe {
  let byUse = endpointClients.get(endpoint);
  if (!byUse) endpointClients.set(endpoint, (byUse = new Map()));
  const cached = byUse.get(options.appName);
  if (cached && cached.apiKey === endpoint.apiKey && cached.apiBaseUrl === endpoint.apiBaseUrl) return cached.client;
  const client = stripeClient(endpoint.apiKey, endpoint.apiBaseUrl, options);
  byUse.set(options.appName, { apiKey: endpoint.apiKey, apiBaseUrl: endpoint.apiBaseUrl, client });
  return client;
}

/** The longest wait a `Retry-After` may ask for before a delivery is tried again (longer is cut to it). */
export const MAX_RETRY_AFTER_MS = 15 * 60_000;

/** An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form an HTTP date is sent in. */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * A `Retry-After` header in milliseconds (delta-seconds or an HTTP date, RFC 9110 §10.2.3), at most
 * MAX_RETRY_AFTER_MS; null when absent or unreadable.
 */
export function retryAfterMs(value: unknown, nowMs = Date.now()): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string' || text.trim() === '') return null;
  const trimmed = text.trim();
  let ms: number;
  if (/^\d{1,10}$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else if (HTTP_DATE.test(trimmed)) ms = Date.parse(trimmed) - nowMs;
  else return null;
  if (Number.isNaN(ms)) return null;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/** A text about a call that may hold the key (an error's message): the key never gets through. */
export function withoutKey(text: string, apiKey: string): string {
  return apiKey.length > 0 ? text.split(apiKey).join('[redacted]') : text;
}
