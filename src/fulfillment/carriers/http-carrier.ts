import { isRetryableStatus, retryAfterMs } from '../../common/http-answers';
import type { CarrierDefinition } from '../../config/options';
import { ANSWER_READ_LIMIT_BYTES, readBoundedAnswer } from '../../common/bounded-answer';
import { CarrierAdapter, isUsableShipmentId, ShipmentRequest, ShipmentResult } from './carrier';
import { codeOf } from '../../common/domain-error';
import { injectTraceparent } from '../../observability/tracing';

/**
 * `POST {url}/shipments` with `Idempotency-Key` (docs/carriers.md#the-carrier-contract). The
 * answer is read up to ANSWER_READ_LIMIT_BYTES (64 KiB) and no further: a longer one is cancelled
 * unread and handled by its status with an unreadable body (a 2xx is then "without an id"). A
 * shipment id that cannot be kept (see isUsableShipmentId) is no id either.
 */
export class HttpCarrierAdapter implements CarrierAdapter {
  readonly name: string;
  private readonly url: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;

  constructor(definition: CarrierDefinition, defaultTimeoutMs: number) {
    this.name = definition.name;
    this.url = `${definition.url}/shipments`;
    this.apiKey = definition.apiKey;
    this.timeoutMs = definition.timeoutMs ?? defaultTimeoutMs;
  }

  async ship(request: ShipmentRequest, idempotencyKey: string): Promise<ShipmentResult> {
    let response: Response;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
      ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
    };
    // A carrier that traces joins the delivery's trace.
    injectTraceparent(headers);
    try {
      response = await fetch(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(request),
        signal: AbortSignal.timeout(this.timeoutMs),
        // A carrier that redirects is misconfigured: report it, never replay the POST as a GET.
        redirect: 'manual',
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      return {
        ok: false,
        retryable: true,
        reason: timedOut ? `no answer within ${this.timeoutMs} ms` : `network error: ${codeOf(err, (err as Error)?.message ?? 'unknown', { cause: true })}`,
        status: timedOut ? 'timeout' : 'network',
        mayHaveShipped: true,
      };
    }
    const answer = await readBoundedAnswer(response);
    const text = answer.text ?? '';
    const status = response.status;
    if (status >= 200 && status < 300) {
      // 200/201 with an id is the contract; any 2xx without one may still have shipped: ask again
      // with the same key rather than give up.
      const id = parseId(text);
      if (typeof id === 'string' && isUsableShipmentId(id)) return { ok: true, shipmentId: id, status: String(status) };
      const why =
        answer.unreadable === 'too_large'
          ? `without a shipment id (an answer over ${ANSWER_READ_LIMIT_BYTES} bytes, not read)`
          : answer.unreadable === 'read_failed'
            ? 'without a shipment id (the answer could not be read)'
            : id === undefined || id === ''
              ? 'without a shipment id'
              : 'with an unusable shipment id';
      return { ok: false, retryable: true, reason: `carrier answered ${status} ${why}`, status: String(status), mayHaveShipped: true };
    }
    if (status >= 300 && status < 400) {
      return { ok: false, retryable: true, reason: `carrier answered ${status} (a redirect; check its url)`, status: String(status) };
    }
    // The carrier's own error code, if it sends one; never its whole body (it may echo the address).
    const code = carrierErrorCode(text);
    const reason = `carrier answered ${status}${code ? ` ${code}` : ''}`;
    if (isRetryableStatus(status)) {
      return { ok: false, retryable: true, reason, retryAfterMs: retryAfterMs(response.headers.get('retry-after')), status: String(status) };
    }
    return { ok: false, retryable: false, reason, status: String(status) };
  }
}

/** The body's `id`: a string (usable or not), or undefined when there is none (no JSON, no string id). */
function parseId(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { id?: unknown };
    return typeof body?.id === 'string' ? body.id : undefined;
  } catch {
    return undefined;
  }
}

function carrierErrorCode(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: unknown; code?: unknown };
    const code = typeof body?.error === 'string' ? body.error : typeof body?.code === 'string' ? body.code : null;
    return code && /^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : null;
  } catch {
    return null;
  }
}
