import { thrownCall } from './command-answers';
import { optionalPackage } from './optional-package';
import type { CommandAnswer, ProviderEndpoint } from './provider';

/**
 * What this module uses of PayPal's official server SDK, `@paypal/paypal-server-sdk`, and the
 * clients made with it: shared by the payment commands (paypal.commands.ts) and the payment reads
 * (paypal.reader.ts).
 */

/** The npm package of PayPal's official server SDK, an optional peer dependency of this module. */
export const PAYPAL_PACKAGE = '@paypal/paypal-server-sdk';

/** The hosts the SDK knows (`Environment`): any other `apiBaseUrl` is reached by moving the production host's requests there. */
const PRODUCTION = 'https://api-m.paypal.com';
const SANDBOX = 'https://api-m.sandbox.paypal.com';
type Money = { currencyCode: string; value: string };
/** An SDK call's answer (`ApiResponse`): the parsed body in `result`, the body as PayPal sent it in `body` (JSON text). */
type Answered<T> = Promise<{ result: T; body?: unknown }>;

/**
 * What the commands and the payment reads use of `@paypal/paypal-server-sdk`, typed here so that a
 * host without the package still compiles against this module.
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
export interface PaypalOrder {
  id?: string;
  intent?: string;
  status?: string;
  purchaseUnits?: Array<{ payments?: { authorizations?: Array<{ id?: string; status?: string }> } }>;
}

export type Controllers = { payments: InstanceType<PaypalSdkPackage['PaymentsController']>; orders: InstanceType<PaypalSdkPackage['OrdersController']> };

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
export function credentialsOf(endpoint: ProviderEndpoint): { clientId: string; clientSecret: string } | null {
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
export function paypalFailure(err: unknown, secrets: readonly string[]): CommandAnswer {
  const reason = paypalReason(err);
  const read = thrownCall(reason === null ? err : Object.assign(Object.create(null) as object, err as object, { message: reason }), 'PayPal');
  if (read.ok) return read;
  let text = read.reason;
  for (const secret of secrets) text = text.split(secret).join('[redacted]');
  return { ...read, reason: text };
}

/** The SDK clients of PayPal endpoints, shared by the commands and the payment reads. */
export interface PaypalClients {
  /** Whether the SDK can be loaded (an endpoint with client credentials is refused at start without it). */
  installed(): boolean;
  /** The endpoint's controllers, made once per (endpoint, credentials, base URL, timeout); null when the SDK is not installed. */
  controllersFor(endpoint: ProviderEndpoint, credentials: { clientId: string; clientSecret: string }, timeoutMs: number): Controllers | null;
}

/**
 * SDK clients kept per endpoint and timeout: each holds the OAuth access token it fetched, which a
 * client per call would fetch again before every call. The SDK's own retries are off
 * (`maxNumberOfRetries: 0`): the caller retries on its own schedule.
 */
export function createPaypalClients(sdkPackage: () => PaypalSdkPackage | null): PaypalClients {
  const clients = new Map<string, Cached>();
  const installed = () => sdkPackage() !== null;

  function controllersFor(endpoint: ProviderEndpoint, credentials: { clientId: string; clientSecret: string }, timeoutMs: number): Controllers | null {
    const base = (endpoint.apiBaseUrl ?? PRODUCTION).replace(/\/+$/, '');
    const fingerprint = JSON.stringify([credentials.clientId, credentials.clientSecret, base]);
    // Commands and reads wait for different times: each keeps its own client (and token).
    const slot = `${endpoint.id}\u0000${timeoutMs}`;
    const cached = clients.get(slot);
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
    clients.set(slot, { fingerprint, controllers });
    return controllers;
  }

  return { installed, controllersFor };
}

/** The built-in PayPal provider's clients (`@paypal/paypal-server-sdk`, loaded the first time one is needed). */
export const paypalClients = createPaypalClients(optionalPackage(PAYPAL_PACKAGE, () => require(PAYPAL_PACKAGE) as PaypalSdkPackage));
