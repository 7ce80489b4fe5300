import { signedHeaders } from '../../testing/sign';
import { readBoundedAnswer } from '../../common/bounded-answer';
import { adyenEventId, itemsOf, NotificationBody, signBody } from './adyen';
import { wireBody, type RemoteProvider } from './events';

/** One signed delivery of an event to a receiver: the bytes and the headers, ready to send again. */
export interface Delivery {
  url: string;
  /** The event it carries (Adyen: the first of its items). */
  eventId: string;
  /** Adyen: the event ids of every item it carries, in order. */
  eventIds?: string[];
  body: string;
  headers: Record<string, string>;
}

/** What the receiver answered; `status` 0 when there was no answer (`error` says why). */
export interface Answer {
  status: number;
  /** The answer's JSON, when it was JSON. */
  json?: Record<string, unknown>;
  text?: string;
  error?: 'timeout' | 'connection';
  /** The network error's message when `error` is set. */
  cause?: string;
  ms: number;
}

/** `http://host:3000/pay` + `/webhooks/x` → `http://host:3000/pay/webhooks/x` (the base URL keeps its route prefix). */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

export function webhookUrl(base: string, endpointId: string): string {
  return joinUrl(base, `/webhooks/${encodeURIComponent(endpointId)}`);
}

export interface SignDeliveryOptions {
  /** Every secret signs: one entry each (standard: `v1` for a `whsec_`, `v1a` for a `whsk_`), as a sender does during a rotation (the first is the current one). */
  secrets: string[];
  /** Unix seconds; default now. Each attempt of a retrying sender signs again with its own time. */
  timestamp?: number;
  /** Factuarea's delivery id (one per endpoint and event, the same on every attempt). */
  deliveryId?: string;
  /** Square: the subscription's notification URL, as registered (signed before the body). */
  notificationUrl?: string;
  /** PayPal: `PAYPAL-CERT-URL`, where the kit serves its signing certificate (the secret is the webhook id). */
  paypalCertUrl?: string;
}

/**
 * Signs `body` as `provider` does and names the event in its id header. Adyen: `body` is a
 * notification body whose items are signed here, each with the first secret (Adyen signs with its
 * current key only; no timestamp is signed, so every attempt sends the same bytes), and sent
 * pretty-printed; `eventId` is ignored, the items name their events.
 */
export function signDelivery(provider: RemoteProvider, url: string, eventId: string, body: string, options: SignDeliveryOptions): Delivery {
  if (provider === 'adyen') {
    const signed = signBody(JSON.parse(body) as NotificationBody, options.secrets[0]);
    const eventIds = itemsOf(signed).map(adyenEventId);
    return { url, eventId: eventIds[0], eventIds, body: wireBody(signed), headers: { 'content-type': 'application/json', 'user-agent': 'payment-webhooks-kit' } };
  }
  const [secret, ...extraSecrets] = options.secrets;
  const headers = signedHeaders(provider, secret, body, {
    // Checkout.com and Square send no event id header; PayPal's transmission id is its own, one per attempt.
    eventId: provider === 'checkout' || provider === 'square' || provider === 'paypal' ? undefined : eventId,
    timestamp: options.timestamp,
    deliveryId: provider === 'paypal' ? undefined : options.deliveryId,
    // Checkout.com, Square and PayPal sign with one key only.
    extraSecrets: provider === 'checkout' || provider === 'square' || provider === 'paypal' ? undefined : extraSecrets,
    notificationUrl: options.notificationUrl,
    certUrl: options.paypalCertUrl,
  });
  if (provider === 'factuarea') headers['factuarea-event-type'] = String((JSON.parse(body) as { type?: unknown }).type ?? '');
  headers['user-agent'] = 'payment-webhooks-kit';
  return { url, eventId, body, headers };
}

/** Sends one HTTP request and reads at most 64 KiB of its answer; a network failure is an answer with status 0. */
export async function send(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
  timeoutMs: number,
): Promise<Answer> {
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method: init.method ?? 'POST',
      headers: init.headers,
      body: init.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const read = await readBoundedAnswer(response);
    const answer: Answer = { status: response.status, ms: performance.now() - started };
    if (read.text !== null) {
      answer.text = read.text;
      try {
        const parsed: unknown = JSON.parse(read.text);
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) answer.json = parsed as Record<string, unknown>;
      } catch {
        // not JSON: the text says what it was
      }
    }
    return answer;
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const timedOut = e.name === 'TimeoutError' || e.name === 'AbortError';
    // A request fetch refused to build (a header value it rejects) would quote the value: a token.
    if (e instanceof TypeError && !e.cause) {
      return { status: 0, error: 'connection', cause: 'the request could not be built (a header or the URL is invalid)', ms: performance.now() - started };
    }
    return {
      status: 0,
      error: timedOut ? 'timeout' : 'connection',
      cause: timedOut ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message),
      ms: performance.now() - started,
    };
  }
}

/** Sends a delivery as it is (the same bytes and headers each time it is called). */
export function deliver(delivery: Delivery, timeoutMs: number): Promise<Answer> {
  return send(delivery.url, { headers: delivery.headers, body: delivery.body }, timeoutMs);
}

/** `200 accepted`, `200 [accepted]` (Adyen's), `401 invalid_signature`, `503 unavailable`, `timeout`: how an answer reads in a summary. */
export function describeAnswer(answer: Answer): string {
  if (answer.status === 0) return answer.error ?? 'no answer';
  const word = answer.json?.status ?? answer.json?.error;
  if (typeof word === 'string') return `${answer.status} ${word}`;
  return answer.text?.trim() === '[accepted]' ? `${answer.status} [accepted]` : String(answer.status);
}

/** `describeAnswer`, and where there was no answer, why: `connection (ECONNREFUSED)`. */
export function describeWithCause(answer: Answer): string {
  const described = describeAnswer(answer);
  return answer.status === 0 && answer.cause ? `${described} (${answer.cause})` : described;
}
