import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * A self-signed certificate for 127.0.0.1 (EC P-256, valid until 2126), for this stub only: the
 * official client speaks HTTPS only (it refuses an `http:` endpoint) and trusts only the CA bundle it
 * ships with, and takes no CA option. `MollieStub.start()` makes connections to the stub's own port
 * trust this certificate, and nothing else; TLS verification stays on.
 */
export const STUB_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgEflY4Q5U7MuAqBU5
EvPgDzCrDUZWoaZOR6eju6MvSkihRANCAASIDqtjknzNZ1EG4M5gpg6dAmXRU3t6
w1VJyCB6jNUCn1OBpBWrZa8+PeNIc8FgfsRDHWyHNCyYMShXRLIy9D65
-----END PRIVATE KEY-----
`;
export const STUB_CERT = `-----BEGIN CERTIFICATE-----
MIIBkDCCATagAwIBAgIUNOUa9T8zrMlYB6AXrqylSB8AR/EwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTIwMjAyNTE0NloYDzIxMjYxMTA4
MDI1MTQ2WjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAASIDqtjknzNZ1EG4M5gpg6dAmXRU3t6w1VJyCB6jNUCn1OBpBWrZa8+
PeNIc8FgfsRDHWyHNCyYMShXRLIy9D65o2QwYjAdBgNVHQ4EFgQUlulC/kBp/j3w
gVQFsUzfABo4Tw0wHwYDVR0jBBgwFoAUlulC/kBp/j3wgVQFsUzfABo4Tw0wDwYD
VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0gAMEUC
IQDN4nTnz6ZCn3vX1MSok1Qps4GtnoU9tn8Qc6FytLOCHAIgB7NcGYsD0GhYkHA4
cZqGsT5XbJBI/kysO+Cy2iTzz2Y=
-----END CERTIFICATE-----
`;

type CreateConnection = (options: Record<string, unknown>, callback?: unknown) => Duplex;
const agentProto = https.Agent.prototype as unknown as { createConnection: CreateConnection };
const trustedPorts = new Set<number>();
let originalCreateConnection: CreateConnection | undefined;

/** Connections to a stub's port trust the stub's certificate (its CA list is replaced for them alone). */
export function trustStub(port: number): void {
  trustedPorts.add(port);
  if (originalCreateConnection) return;
  const original = (originalCreateConnection = agentProto.createConnection);
  agentProto.createConnection = function (this: unknown, options: Record<string, unknown>, callback?: unknown) {
    const toStub = trustedPorts.has(Number(options.port)) && (options.host === '127.0.0.1' || options.hostname === '127.0.0.1');
    return original.call(this, toStub ? { ...options, ca: STUB_CERT } : options, callback);
  };
}

export function distrustStub(port: number): void {
  trustedPorts.delete(port);
  if (trustedPorts.size > 0 || !originalCreateConnection) return;
  agentProto.createConnection = originalCreateConnection;
  originalCreateConnection = undefined;
}

/** A Mollie payment status (Payments API). */
export type MollieStatus = 'open' | 'pending' | 'authorized' | 'paid' | 'failed' | 'canceled' | 'expired';

/** One request the stub answered. */
export interface SeenRequest {
  paymentId: string;
  authorization: string | undefined;
  embed: string | null;
  status: number;
}

const DOCS = 'https://docs.mollie.com/reference/get-payment';

function mollieId(prefix: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return `${prefix}_${[...randomBytes(10)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

/** Adds two decimal strings of the same exponent ("10.00" + "2.50"). */
function addDecimal(a: string, b: string): string {
  const decimals = Math.max((a.split('.')[1] ?? '').length, (b.split('.')[1] ?? '').length);
  const scale = 10 ** decimals;
  const sum = Math.round(Number(a) * scale) + Math.round(Number(b) * scale);
  return (sum / scale).toFixed(decimals);
}

function subtractDecimal(a: string, b: string): string {
  return addDecimal(a, `-${b}`);
}

/**
 * A local stand-in for Mollie's Payments API (`GET /v2/payments/{id}`, with `embed=refunds,chargebacks`),
 * over HTTPS on 127.0.0.1 and a free port, in the shapes of https://docs.mollie.com/reference/get-payment:
 * payments with their refunds and chargebacks (`amountRefunded`, `amountRemaining`, `amountChargedBack`
 * and `_embedded` move as they are added), Mollie's error bodies for an unknown payment (404) and a wrong
 * key (401, the Bearer key is checked), `failNext(n, 429 | 5xx)`, answers `slow` by a delay, and a count
 * of requests per payment id.
 */
export class MollieStub {
  readonly requests: SeenRequest[] = [];
  private server: https.Server | undefined;
  private port = 0;
  private readonly payments = new Map<string, Record<string, any>>();
  private failures: Array<{ status: number; retryAfter?: number }> = [];
  private delayMs = 0;
  private holding: Array<() => void> | null = null;
  private readonly delayed = new Set<NodeJS.Timeout>();

  constructor(
    readonly apiKey = 'test_stubKey9aF3kQ2mW7xR4tY8uJ6nB1c',
    readonly profileId = 'pfl_StubProf01',
  ) {}

  async start(): Promise<void> {
    this.server = https.createServer({ key: STUB_KEY, cert: STUB_CERT }, (req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    trustStub(this.port);
  }

  async stop(): Promise<void> {
    distrustStub(this.port);
    for (const timer of this.delayed) clearTimeout(timer);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The `apiBaseUrl` of an endpoint that fetches from this stub. */
  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  reset(): void {
    this.payments.clear();
    this.requests.length = 0;
    this.failures = [];
    this.delayMs = 0;
    this.holding = null;
  }

  /** Requests that asked for `paymentId`, whatever they were answered. */
  requestsFor(paymentId: string): number {
    return this.requests.filter((r) => r.paymentId === paymentId).length;
  }

  /** Adds a payment as Mollie's API returns it (test mode, iDEAL once paid). */
  addPayment(opts: { status?: MollieStatus; value?: string; currency?: string; orderId?: string; profileId?: string; id?: string } = {}): Record<string, any> {
    const id = opts.id ?? mollieId('tr');
    const value = opts.value ?? '49.90';
    const currency = opts.currency ?? 'EUR';
    const payment: Record<string, any> = {
      resource: 'payment',
      id,
      mode: 'test',
      createdAt: '2026-12-01T10:00:00+00:00',
      amount: { value, currency },
      description: `Order ${opts.orderId ?? 'without id'}`,
      method: null,
      metadata: opts.orderId ? { order_id: opts.orderId } : null,
      status: 'open',
      isCancelable: false,
      expiresAt: '2026-12-01T10:15:00+00:00',
      profileId: opts.profileId ?? this.profileId,
      sequenceType: 'oneoff',
      redirectUrl: 'https://shop.example.org/return',
      webhookUrl: 'https://shop.example.org/webhooks/mollie-main',
      _links: {
        self: { href: `https://api.mollie.com/v2/payments/${id}`, type: 'application/hal+json' },
        checkout: { href: `https://www.mollie.com/checkout/select-method/${id.slice(3)}`, type: 'text/html' },
        dashboard: { href: `https://www.mollie.com/dashboard/org_1/payments/${id}`, type: 'text/html' },
        documentation: { href: DOCS, type: 'text/html' },
      },
    };
    this.payments.set(id, payment);
    this.setStatus(id, opts.status ?? 'open');
    return payment;
  }

  /** Moves a payment to `status`, with the fields Mollie shows for it. */
  setStatus(id: string, status: MollieStatus): void {
    const payment = this.payment(id);
    payment.status = status;
    if (status === 'paid') {
      payment.paidAt = '2026-12-01T10:02:00+00:00';
      payment.method = 'ideal';
      payment.details = { consumerName: 'A. Lovelace', consumerAccount: 'NL53INGB0000000000', consumerBic: 'INGBNL2A' };
      payment.amountRefunded ??= { value: (0).toFixed(payment.amount.value.split('.')[1]?.length ?? 0), currency: payment.amount.currency };
      payment.amountRemaining ??= { ...payment.amount };
      payment.settlementAmount = { ...payment.amount };
      delete payment._links.checkout;
    }
    if (status === 'authorized') payment.authorizedAt = '2026-12-01T10:01:00+00:00';
    if (status === 'canceled') payment.canceledAt = '2026-12-01T10:03:00+00:00';
    if (status === 'expired') payment.expiredAt = '2026-12-01T10:15:00+00:00';
    if (status === 'failed') payment.failedAt = '2026-12-01T10:03:00+00:00';
    payment.isCancelable = status === 'open' || status === 'authorized';
  }

  /** Refunds `value` of a paid payment: a refund in `_embedded`, `amountRefunded` and `amountRemaining` moved. */
  refund(id: string, value: string): Record<string, unknown> {
    const payment = this.payment(id);
    const currency = payment.amount.currency;
    const refund = {
      resource: 'refund',
      id: mollieId('re'),
      mode: 'test',
      description: 'Refund',
      amount: { value, currency },
      status: 'pending',
      metadata: null,
      paymentId: id,
      createdAt: '2026-12-01T11:00:00+00:00',
      _links: {
        self: { href: `https://api.mollie.com/v2/payments/${id}/refunds`, type: 'application/hal+json' },
        payment: { href: `https://api.mollie.com/v2/payments/${id}`, type: 'application/hal+json' },
      },
    };
    payment.refunds = [...(payment.refunds ?? []), refund];
    payment.amountRefunded = { value: addDecimal(payment.amountRefunded?.value ?? '0', value), currency };
    payment.amountRemaining = { value: subtractDecimal(payment.amountRemaining?.value ?? payment.amount.value, value), currency };
    return refund;
  }

  /** A chargeback of `value`: in `_embedded`, and `amountChargedBack` moved. */
  chargeBack(id: string, value: string): Record<string, unknown> {
    const payment = this.payment(id);
    const currency = payment.amount.currency;
    const chargeback = {
      resource: 'chargeback',
      id: mollieId('chb'),
      amount: { value, currency },
      settlementAmount: { value: `-${value}`, currency },
      createdAt: '2026-12-01T12:00:00+00:00',
      reason: { code: 'AC01', description: 'Account identifier incorrect (i.e. invalid IBAN)' },
      paymentId: id,
      _links: {
        self: { href: `https://api.mollie.com/v2/payments/${id}/chargebacks`, type: 'application/hal+json' },
        payment: { href: `https://api.mollie.com/v2/payments/${id}`, type: 'application/hal+json' },
      },
    };
    payment.chargebacks = [...(payment.chargebacks ?? []), chargeback];
    payment.amountChargedBack = { value: addDecimal(payment.amountChargedBack?.value ?? '0', value), currency };
    return chargeback;
  }

  /** The next `count` requests answer `status` (429, 5xx) with Mollie's error body; `retryAfter` seconds sent as `Retry-After`. */
  failNext(count: number, status: number, opts: { retryAfter?: number } = {}): void {
    for (let i = 0; i < count; i++) this.failures.push({ status, ...opts });
  }

  /** Every answer waits `ms` first (0: none). */
  slow(ms: number): void {
    this.delayMs = ms;
  }

  /**
   * Answers wait, each with the payment as it was when its request arrived, until the function
   * returned is called; then they go out, and later requests are answered at once.
   */
  hold(): () => void {
    const held: Array<() => void> = [];
    this.holding = held;
    return () => {
      if (this.holding === held) this.holding = null;
      for (const send of held.splice(0)) send();
    };
  }

  private payment(id: string): Record<string, any> {
    const payment = this.payments.get(id);
    if (!payment) throw new Error(`the stub has no payment ${id}`);
    return payment;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://stub');
    const match = /^\/v2\/payments\/([^/]+)$/.exec(url.pathname);
    const seen: SeenRequest = { paymentId: match?.[1] ?? '', authorization: req.headers.authorization, embed: url.searchParams.get('embed'), status: 0 };
    this.requests.push(seen);
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      const send = () => {
        seen.status = status;
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': status < 300 ? 'application/hal+json' : 'application/hal+json; charset=utf-8', ...headers });
        res.end(JSON.stringify(body));
      };
      if (this.holding) return void this.holding.push(send);
      if (this.delayMs === 0) return send();
      const timer = setTimeout(() => {
        this.delayed.delete(timer);
        send();
      }, this.delayMs);
      this.delayed.add(timer);
    };
    const error = (status: number, title: string, detail: string) =>
      ({ status, title, detail, _links: { documentation: { href: 'https://docs.mollie.com/overview/handling-errors', type: 'text/html' } } });

    if (req.method !== 'GET' || !match) return answer(404, error(404, 'Not Found', 'The resource does not exist'));
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return answer(401, error(401, 'Unauthorized Request', 'Missing authentication, or failed to authenticate'));
    }
    const failure = this.failures.shift();
    if (failure) {
      const title = failure.status === 429 ? 'Too Many Requests' : 'Internal Server Error';
      return answer(failure.status, error(failure.status, title, 'Please try again later'), failure.retryAfter === undefined ? {} : { 'retry-after': String(failure.retryAfter) });
    }
    const payment = this.payments.get(match[1]);
    if (!payment) return answer(404, error(404, 'Not Found', `No payment exists with token ${match[1]}.`));
    answer(200, this.present(payment, (seen.embed ?? '').split(',')));
  }

  /** The payment as the API shows it: its refunds and chargebacks under `_embedded` when asked for and present. */
  private present(payment: Record<string, any>, embed: string[]): Record<string, unknown> {
    const { refunds, chargebacks, _links, ...fields } = payment;
    const embedded: Record<string, unknown> = {};
    if (embed.includes('refunds') && refunds) embedded.refunds = refunds;
    if (embed.includes('chargebacks') && chargebacks) embedded.chargebacks = chargebacks;
    return { ...fields, ...(Object.keys(embedded).length > 0 ? { _embedded: embedded } : {}), _links };
  }
}
