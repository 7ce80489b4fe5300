import {
  asObject,
  decimal,
  failedCall,
  text,
  type CommandAnswer,
  type PaymentCommands,
  type PaymentReader,
  type ProviderAdapter,
  ProviderApiError,
  RATE_LIMITED,
  type ProviderEvent,
  type ProviderEventKind,
} from '../../src';
import { acmeProvider } from './acme-provider';
import { ProviderApiStub } from './provider-api-stub';

/**
 * "acmepay": the host's own provider "acme" (test/support/acme-provider.ts) with payment commands, as
 * a host adds them (docs/providers.md, docs/commands.md): its API is `POST {apiBaseUrl}/charges/{id}/refunds`,
 * `/capture` and `/void`, with the key in `Idempotency-Key` and `Authorization: Bearer <apiKey>`. Its
 * events add `charge.authorized`, a `charge.refunded` that names the refund it reports
 * (`charge.refund_id`), and `refund.failed`, which changes no amount.
 */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['charge.authorized', 'authorized'],
  ['refund.failed', 'refund_outcome'],
]);

const commands: PaymentCommands = {
  types: ['refund', 'capture', 'void'],
  ready: (endpoint) => typeof endpoint.apiKey === 'string' && typeof endpoint.apiBaseUrl === 'string',
  async send(command, target, context): Promise<CommandAnswer> {
    const path = command.type === 'refund' ? 'refunds' : command.type;
    const body = command.type === 'void' ? {} : { amount: command.amount.decimal, currency: command.amount.currency };
    let res: Response;
    try {
      res = await fetch(`${context.endpoint.apiBaseUrl}/charges/${encodeURIComponent(target.providerPaymentId)}/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${context.endpoint.apiKey}`, 'idempotency-key': context.idempotencyKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(context.timeoutMs),
      });
    } catch (err) {
      return failedCall(null, `acmepay is unreachable: ${(err as Error).message}`);
    }
    const answer = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok) return failedCall(res.status, String(answer.error ?? `acmepay answered ${res.status}`), res.headers.get('retry-after'));
    if (command.type !== 'refund') return { ok: true };
    return { ok: true, providerRefundId: typeof answer.id === 'string' ? answer.id : null, status: answer.status === 'succeeded' ? 'succeeded' : 'pending' };
  },
};

/** Its status read, for polling (docs/providers.md): `GET {apiBaseUrl}/charges/{id}` → `{ id, status, amount, currency, order_id }`. */
const readPayment: PaymentReader = {
  ready: commands.ready,
  async read(target, context) {
    const res = await fetch(`${context.endpoint.apiBaseUrl}/charges/${encodeURIComponent(target.providerPaymentId)}`, {
      headers: { authorization: `Bearer ${context.endpoint.apiKey}` },
      signal: AbortSignal.timeout(context.timeoutMs),
    }).catch((err: Error) => {
      throw new ProviderApiError(`acmepay is unreachable: ${err.message}`);
    });
    if (res.status === 404) return { found: false };
    if (!res.ok) {
      const retryAfter = Number(res.headers.get('retry-after'));
      throw new ProviderApiError(`acmepay answered ${res.status}`, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null, res.status === 429 ? RATE_LIMITED : undefined);
    }
    const charge = (await res.json()) as Record<string, unknown>;
    const status = String(charge.status);
    const eventType = status === 'paid' ? 'charge.paid' : status === 'failed' ? 'charge.failed' : null;
    return { found: true, status, refunded: '0', event: eventType === null ? null : { eventType, body: { event: { type: eventType }, charge } } };
  },
};

export const acmePayProvider: ProviderAdapter = {
  ...acmeProvider,
  name: 'acmepay',
  usesApi: { defaultBaseUrl: 'https://api.acmepay.test' },
  commands,
  readPayment,
  normalize(body, eventType, endpoint): ProviderEvent | null {
    const charge = asObject(body.charge);
    const kind = KINDS.get(eventType);
    if (kind && charge && text(charge.id)) {
      const failed = eventType === 'refund.failed';
      return {
        kind,
        resourceId: text(charge.id)!,
        orderId: text(charge.order_id),
        amount: failed ? null : decimal(charge.amount),
        currency: text(charge.currency),
        refundedAmount: null,
        declaredAccount: text(asObject(body.event)?.merchant),
        occurredAt: null,
        refundOutcomes: failed ? [{ id: String(charge.refund_id), status: 'failed', reason: text(charge.failure_reason) }] : undefined,
      };
    }
    const event = acmeProvider.normalize(body, eventType, endpoint);
    if (event?.kind === 'refunded' && text(charge?.refund_id)) return { ...event, refundOutcomes: [{ id: text(charge!.refund_id)!, status: 'succeeded' }] };
    return event;
  },
};

/**
 * The acmepay API on a stub: refunds answer `{ id: "rf_<n>", status }`, captures and voids `{ status }`;
 * `GET /charges/{id}` a charge of `opts.charges` (404 for another).
 */
export function acmePayApi(
  stub: ProviderApiStub,
  opts: { refundStatus?: () => 'pending' | 'succeeded'; withoutId?: (amount: unknown) => boolean; charges?: Map<string, Record<string, unknown>> } = {},
): ProviderApiStub {
  let n = 0;
  return stub
    .route({
      method: 'GET',
      path: /^\/charges\/([^/]+)$/,
      handle: (_r, m) => {
        const charge = opts.charges?.get(decodeURIComponent(m[1]));
        return charge ? { status: 200, body: charge } : { status: 404, body: { error: 'no such charge' } };
      },
    })
    .route({
      method: 'POST',
      path: /^\/charges\/([^/]+)\/refunds$/,
      key: 'idempotency-key',
      handle: (r, m) => {
        const id = `rf_${++n}_${Math.random().toString(36).slice(2, 10)}`;
        stub.effect('refund', r.key, { charge: m[1], id, amount: r.json?.amount });
        // A broken answer: accepted, without the refund's id.
        if (opts.withoutId?.(r.json?.amount)) return { status: 200, body: { status: 'pending', amount: r.json?.amount } };
        return { status: 200, body: { id, status: opts.refundStatus?.() ?? 'pending', amount: r.json?.amount } };
      },
    })
    .route({
      method: 'POST',
      path: /^\/charges\/([^/]+)\/capture$/,
      key: 'idempotency-key',
      handle: (r, m) => {
        stub.effect('capture', r.key, { charge: m[1], amount: r.json?.amount });
        return { status: 200, body: { status: 'captured' } };
      },
    })
    .route({
      method: 'POST',
      path: /^\/charges\/([^/]+)\/void$/,
      key: 'idempotency-key',
      handle: (r, m) => {
        stub.effect('void', r.key, { charge: m[1] });
        return { status: 200, body: { status: 'voided' } };
      },
    });
}
