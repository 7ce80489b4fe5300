import { thrownCall } from './command-answers';
import { optionalPackage } from './optional-package';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';

/** The npm package of PayPal's official server SDK, an optional peer dependency of this module. */
export const PAYPAL_PACKAGE = '@paypal/paypal-server-sdk';

/** The hosts the SDK knows (`Environment`): any other `apiBaseUrl` is reached by moving the production host's requests there. */
const PRODUCTION = 'https://api-m.paypal.com';
const SANDBOX = 'https://api-m.sandbox.paypal.com';
/** PayPal shows at most 255 characters of a refund's note to the payer. */
const NOTE_MAX = 255;

type Money = { currencyCode: string; value: string };
/** An SDK call's answer (`ApiResponse`): the parsed body in `result`. */
type Answered<T> = Promise<{ result: T }>;

/**
 * What the commands use of `@paypal/paypal-server-sdk`, typed here so that a host without the
 * package still compiles against this module.
 */
export interface PaypalSdkPackage {
  Client: new (config: Record<string, unknown>) => object;
  Environment: { Production: string; Sandbox: string };
  PaymentsController: new (client: object) => {
    refundCapturedPayment(request: { captureId: string; paypalRequestId: string; body: { amount: Money; noteToPayer?: string } }): Answered<{ id?: string; status?: string; statusDetails?: { reason?: string } }>;
    captureAuthorizedPayment(request: { authorizationId: string; paypalRequestId: string; body: { amount: Money; finalCapture: boolean } }): Answered<unknown>;
    voidPayment(request: { authorizationId: string; paypalRequestId: string }): Answered<unknown>;
  };
  OrdersController: new (client: object) => {
    getOrder(request: { id: string }): Answered<PaypalOrder>;
    captureOrder(request: { id: string; paypalRequestId: string }): Answered<unknown>;
  };
}

/** The fields of an Orders API order the commands read (the SDK's camel-case names). */
interface PaypalOrder {
  id?: string;
  intent?: string;
  status?: string;
  purchaseUnits?: Array<{ payments?: { authorizations?: Array<{ id?: string; status?: string }> } }>;
}

type Controllers = { payments: InstanceType<PaypalSdkPackage['PaymentsController']>; orders: InstanceType<PaypalSdkPackage['OrdersController']> };

/**
 * One endpoint's SDK client, kept per (endpoint id, client id and secret, base URL, timeout): the
 * client holds the OAuth access token it fetched (`POST /v1/oauth2/token`, valid for hours), which a
 * client per call would fetch again before every command.
 */
interface Cached {
  fingerprint: string;
  controllers: Controllers;
}

/** The endpoint's OAuth client credentials, when it has both. */
function credentialsOf(endpoint: ProviderEndpoint): { clientId: string; clientSecret: string } | null {
  const { clientId, clientSecret } = endpoint.settings;
  return typeof clientId === 'string' && clientId !== '' && typeof clientSecret === 'string' && clientSecret !== '' ? { clientId, clientSecret } : null;
}

/**
 * Moves a request for the production host to `base`, path and query kept: the SDK builds every URL
 * (the OAuth token's too) from its environment's host and has no setting for another, so a sandbox
 * of one's own or a test's stub is reached through its axios options (`unstable_httpClientOptions`),
 * where axios calls this with the request's config before sending it.
 */
function rebaseTo(base: string) {
  return function rebase(this: { url?: string }, data: unknown): unknown {
    if (typeof this.url === 'string' && this.url.startsWith(`${PRODUCTION}/`)) this.url = `${base}${this.url.slice(PRODUCTION.length)}`;
    return data;
  };
}

/** PayPal's error body (`name`, `message`, `details[].issue`/`description`; OAuth: `error`, `error_description`) as one line. */
function paypalReason(err: unknown): string | null {
  const body = (err as { body?: unknown } | null)?.body;
  if (typeof body !== 'string' || body === '') return null;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof parsed.error === 'string') return typeof parsed.error_description === 'string' ? `${parsed.error}: ${parsed.error_description}` : parsed.error;
  const detail = Array.isArray(parsed.details) ? (parsed.details[0] as Record<string, unknown> | undefined) : undefined;
  const name = typeof parsed.name === 'string' ? parsed.name : null;
  if (detail && typeof detail.issue === 'string') {
    return [name, detail.issue, typeof detail.description === 'string' ? detail.description : null].filter((p) => p !== null).join(': ');
  }
  const message = typeof parsed.message === 'string' ? parsed.message : null;
  return name || message ? [name, message].filter((p) => p !== null).join(': ') : null;
}

/** What the SDK threw, read as every provider's answer is, with PayPal's own reason; never a credential. */
function answerOf(err: unknown, secrets: readonly string[]): CommandAnswer {
  const reason = paypalReason(err);
  const read = thrownCall(reason === null ? err : Object.assign(Object.create(null) as object, err as object, { message: reason }), 'PayPal');
  if (read.ok) return read;
  let text = read.reason;
  for (const secret of secrets) text = text.split(secret).join('[redacted]');
  return { ...read, reason: text };
}

/** A refund as PayPal answered it: `COMPLETED` is money returned; `FAILED`/`CANCELLED` a refusal. */
function refundAnswer(refund: { id?: string; status?: string; statusDetails?: { reason?: string } }): CommandAnswer {
  const id = typeof refund.id === 'string' && refund.id !== '' ? refund.id : null;
  if (refund.status === 'FAILED' || refund.status === 'CANCELLED') {
    const why = refund.statusDetails?.reason ? ` (${refund.statusDetails.reason})` : '';
    return { ok: false, retryable: false, reason: `PayPal answered refund ${id ?? '(no id)'} ${refund.status}${why}` };
  }
  return { ok: true, providerRefundId: id, status: refund.status === 'COMPLETED' ? 'succeeded' : 'pending' };
}

/** The authorization of the order to capture or void: the latest, whatever its status (a repeat of the key must reach the same one). */
function latestAuthorization(order: PaypalOrder): string | null {
  const ids = (order.purchaseUnits ?? []).flatMap((unit) => (unit.payments?.authorizations ?? []).map((a) => a.id)).filter((id): id is string => typeof id === 'string' && id !== '');
  return ids.length > 0 ? ids[ids.length - 1] : null;
}

const refused = (reason: string): CommandAnswer => ({ ok: false, retryable: false, reason });

/**
 * Refunds, captures and voids through `@paypal/paypal-server-sdk` (docs/commands.md#paypal), with the endpoint's OAuth client credentials (`clientId`,
 * `clientSecret`) and the command's key as `PayPal-Request-Id` (`paypalRequestId`) on every write:
 *
 * - a refund names a capture, not the order: `refundCapturedPayment` of the latest capture recorded
 *   for the payment (`target.captureIds`);
 * - a capture or a void names the order's authorization, read with `getOrder` (the payment's id is
 *   the PayPal order's): `captureAuthorizedPayment`, `voidPayment`; an order of intent `CAPTURE`
 *   approved and never captured is captured whole with `captureOrder`.
 *
 * The SDK's own retries are off (`maxNumberOfRetries: 0`): the outbox retries, with the same key.
 */
export function createPaypalCommands(sdkPackage: () => PaypalSdkPackage | null): PaymentCommands & { installed(): boolean } {
  const clients = new Map<string, Cached>();

  function controllersFor(endpoint: ProviderEndpoint, credentials: { clientId: string; clientSecret: string }, timeoutMs: number): Controllers | null {
    const base = (endpoint.apiBaseUrl ?? PRODUCTION).replace(/\/+$/, '');
    const fingerprint = JSON.stringify([credentials.clientId, credentials.clientSecret, base, timeoutMs]);
    const cached = clients.get(endpoint.id);
    if (cached && cached.fingerprint === fingerprint) return cached.controllers;
    const sdk = sdkPackage();
    if (!sdk) return null;
    const client = new sdk.Client({
      clientCredentialsAuthCredentials: { oAuthClientId: credentials.clientId, oAuthClientSecret: credentials.clientSecret },
      environment: base === SANDBOX ? sdk.Environment.Sandbox : sdk.Environment.Production,
      timeout: timeoutMs,
      httpClientOptions: { timeout: timeoutMs, retryConfig: { maxNumberOfRetries: 0 } },
      ...(base === SANDBOX || base === PRODUCTION ? {} : { unstable_httpClientOptions: { transformRequest: [rebaseTo(base)] } }),
    });
    const controllers = { payments: new sdk.PaymentsController(client), orders: new sdk.OrdersController(client) };
    clients.set(endpoint.id, { fingerprint, controllers });
    return controllers;
  }

  async function refund(c: Controllers, command: Extract<PaymentCommand, { type: 'refund' }>, target: CommandTarget, key: string): Promise<CommandAnswer> {
    const captureId = target.captureIds[target.captureIds.length - 1];
    if (captureId === undefined) return refused(`no capture is recorded for PayPal order ${target.providerPaymentId}: a PayPal refund names the capture`);
    const body = {
      amount: { currencyCode: command.amount.currency, value: command.amount.decimal },
      ...(command.reason ? { noteToPayer: command.reason.slice(0, NOTE_MAX) } : {}),
    };
    const { result } = await c.payments.refundCapturedPayment({ captureId, paypalRequestId: key, body });
    return refundAnswer(result ?? {});
  }

  async function capture(c: Controllers, command: Extract<PaymentCommand, { type: 'capture' }>, target: CommandTarget, key: string): Promise<CommandAnswer> {
    const { result: order } = await c.orders.getOrder({ id: target.providerPaymentId });
    const authorizationId = latestAuthorization(order);
    const amount = { currencyCode: command.amount.currency, value: command.amount.decimal };
    if (authorizationId !== null) {
      await c.payments.captureAuthorizedPayment({ authorizationId, paypalRequestId: key, body: { amount, finalCapture: true } });
      return { ok: true };
    }
    if (order.intent !== 'CAPTURE') return refused(`PayPal order ${target.providerPaymentId} has no authorization to capture (intent ${order.intent ?? 'unknown'}, status ${order.status ?? 'unknown'})`);
    // An approved order of intent CAPTURE is captured whole: PayPal takes no amount for it.
    if (command.amount.minor !== target.amount.minor) return refused(`PayPal captures an approved order of intent CAPTURE whole: ${command.amount.decimal} of ${target.amount.decimal} cannot be captured`);
    await c.orders.captureOrder({ id: target.providerPaymentId, paypalRequestId: key });
    return { ok: true };
  }

  async function voidOrder(c: Controllers, target: CommandTarget, key: string): Promise<CommandAnswer> {
    const { result: order } = await c.orders.getOrder({ id: target.providerPaymentId });
    const authorizationId = latestAuthorization(order);
    if (authorizationId === null) {
      return refused(`PayPal order ${target.providerPaymentId} has no authorization to void (an order approved and never authorized or captured is not voided: it expires)`);
    }
    await c.payments.voidPayment({ authorizationId, paypalRequestId: key });
    return { ok: true };
  }

  return {
    types: ['refund', 'capture', 'void'],

    /** Whether the SDK can be loaded (an endpoint with client credentials is refused at start without it). */
    installed: () => sdkPackage() !== null,

    ready: (endpoint) => credentialsOf(endpoint) !== null,

    async send(command, target, context: CommandContext): Promise<CommandAnswer> {
      const { endpoint, idempotencyKey, timeoutMs } = context;
      const credentials = credentialsOf(endpoint);
      if (!credentials) return refused(`endpoint "${endpoint.id}" has no PayPal clientId and clientSecret`);
      const controllers = controllersFor(endpoint, credentials, timeoutMs);
      // The package is missing (installing it and retrying the dead message sends the same key).
      if (controllers === null) return refused(`the ${PAYPAL_PACKAGE} package is not installed: npm install ${PAYPAL_PACKAGE}`);
      try {
        if (command.type === 'refund') return await refund(controllers, command, target, idempotencyKey);
        if (command.type === 'capture') return await capture(controllers, command, target, idempotencyKey);
        return await voidOrder(controllers, target, idempotencyKey);
      } catch (err) {
        return answerOf(err, [credentials.clientSecret]);
      }
    },
  };
}

/** The built-in PayPal provider's commands (`@paypal/paypal-server-sdk`, loaded the first time a command is sent). */
export const paypalCommands = createPaypalCommands(optionalPackage(PAYPAL_PACKAGE, () => require(PAYPAL_PACKAGE) as PaypalSdkPackage));
