import { failedCall } from './command-answers';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';

/** The official package the commands call the Checkout API with: an optional peer, loaded on the first command. */
const PACKAGE = '@adyen/api-library';

/** What the library derives for the Checkout API outside LIVE: the commands replace it with the endpoint's `apiBaseUrl`. */
const LIBRARY_CHECKOUT_ROOT = 'https://checkout-test.adyen.com';

/**
 * Where an endpoint's Checkout API is when it names none (docs/configuration.md#endpoints). A live merchant
 * account is served under its own prefix, which Adyen's Customer Area shows: such an endpoint gives
 * `https://<prefix>-checkout-live.adyenpayments.com/checkout`; a test account
 * `https://checkout-test.adyen.com` (docs/commands.md#adyen).
 */
export const DEFAULT_ADYEN_CHECKOUT_API = 'https://checkout-live.adyen.com';

/** A modification's answer (PaymentRefundResponse, PaymentCaptureResponse, PaymentCancelResponse): `received`, under its own pspReference. */
interface ModificationAnswer {
  pspReference?: string;
  status?: string;
}

interface ModificationsApi {
  refundCapturedPayment(psp: string, request: Record<string, unknown>, options: { idempotencyKey: string }): Promise<ModificationAnswer>;
  captureAuthorisedPayment(psp: string, request: Record<string, unknown>, options: { idempotencyKey: string }): Promise<ModificationAnswer>;
  cancelAuthorisedPaymentByPspReference(psp: string, request: Record<string, unknown>, options: { idempotencyKey: string }): Promise<ModificationAnswer>;
}

/** The library's HTTP client interface: what sends a request the services built. */
interface HttpClient {
  request(endpoint: string, json: string | Buffer, config: unknown, isApiKeyRequired: boolean, requestOptions?: unknown): Promise<string>;
}

/** What the commands use of the official package, typed here so that nothing of it is imported. */
export interface AdyenCheckoutLibrary {
  Client: new (config: { apiKey: string; environment: 'TEST' | 'LIVE'; connectionTimeoutMillis: number; applicationName?: string }, httpClient?: HttpClient) => object;
  CheckoutAPI: new (client: object) => { ModificationsApi: ModificationsApi };
  HttpURLConnectionClient: new () => HttpClient;
}

export type AdyenCheckoutLoader = () => AdyenCheckoutLibrary;

const requireLibrary: AdyenCheckoutLoader = () => require('@adyen/api-library') as AdyenCheckoutLibrary;

/**
 * The library's own HTTP client, sending what the Checkout services build to the endpoint's
 * `apiBaseUrl` instead of the host the library derives: the library has no setting for the
 * Checkout API's address, and takes an HTTP client of the host's (its `ClientInterface`). A URL of
 * anything else than the Checkout API is never sent anywhere.
 */
function toBaseUrl(inner: HttpClient, apiBaseUrl: string): HttpClient {
  return {
    request(endpoint, json, config, isApiKeyRequired, requestOptions) {
      if (!endpoint.startsWith(`${LIBRARY_CHECKOUT_ROOT}/`)) return Promise.reject(new Error(`not a Checkout API call: ${endpoint}`));
      return inner.request(`${apiBaseUrl}${endpoint.slice(LIBRARY_CHECKOUT_ROOT.length)}`, json, config, isApiKeyRequired, requestOptions);
    },
  };
}

/** A text about a call that may hold the key: the key never gets through. */
function withoutKey(text: string, apiKey: string): string {
  return text.split(apiKey).join('[redacted]');
}

/** Minor units as the integer Adyen takes (`amount.value`); null past what a double holds exactly. */
function integerAmount(minor: bigint): number | null {
  return minor > 0n && minor <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(minor) : null;
}

/**
 * What the library threw, read: an `HttpClientException` is an answer (its `statusCode`, its
 * `responseHeaders`, and Adyen's error object `apiError`: `message` and `errorCode`); anything else
 * (an `ApiException` of a socket error or a timeout, a connection cut mid-answer) is no answer,
 * whose effect may have happened.
 */
export function adyenFailure(err: unknown, apiKey: string): CommandAnswer {
  const e = (err ?? {}) as {
    name?: unknown;
    message?: unknown;
    statusCode?: unknown;
    responseHeaders?: Record<string, unknown>;
    apiError?: { message?: unknown; errorCode?: unknown };
  };
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : 'the Adyen Checkout API failed';
  if (e.name !== 'HttpClientException' || typeof e.statusCode !== 'number') return failedCall(null, withoutKey(message, apiKey));
  const api = e.apiError;
  const said = typeof api?.message === 'string' && api.message !== '' ? api.message : null;
  const code = typeof api?.errorCode === 'string' && api.errorCode !== '' ? ` (errorCode ${api.errorCode})` : '';
  const retryAfter = e.responseHeaders?.['retry-after'];
  return failedCall(e.statusCode, withoutKey(said === null ? message : `${said}${code}`, apiKey), typeof retryAfter === 'string' ? retryAfter : null);
}

async function call(api: ModificationsApi, command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer> {
  const psp = target.providerPaymentId;
  const options = { idempotencyKey: context.idempotencyKey };
  // Adyen's own reference of the modification, shown in its Customer Area: the refund's id, or the command's key.
  const base = { merchantAccount: target.merchantAccountId, reference: command.type === 'refund' ? command.refundId : context.idempotencyKey };
  if (command.type === 'void') {
    await api.cancelAuthorisedPaymentByPspReference(psp, base, options);
    return { ok: true };
  }
  const value = integerAmount(command.amount.minor);
  if (value === null) return { ok: false, retryable: false, reason: `amount ${command.amount.decimal} ${command.amount.currency} is not one Adyen takes` };
  const request = { ...base, amount: { value, currency: command.amount.currency } };
  if (command.type === 'capture') {
    await api.captureAuthorisedPayment(psp, request, options);
    return { ok: true };
  }
  const answer = await api.refundCapturedPayment(psp, request, options);
  // Adyen answers `received`: the REFUND webhook tells the outcome, under this pspReference.
  if (typeof answer?.pspReference !== 'string' || answer.pspReference === '') {
    return { ok: false, retryable: true, reason: 'Adyen answered the refund without a pspReference', mayHaveHappened: true };
  }
  return { ok: true, providerRefundId: answer.pspReference, status: 'pending' };
}

/**
 * Adyen's payment commands through the official `@adyen/api-library` (docs/commands.md#adyen): the
 * Checkout API's `ModificationsApi` (`refundCapturedPayment`, `captureAuthorisedPayment`,
 * `cancelAuthorisedPaymentByPspReference`), with the command's key as `Idempotency-Key` and the
 * payment's merchant account. A client is made per call: the library opens a new agent for every
 * request anyway (no connection is kept to share), and a client of its own carries this call's
 * timeout and key and nothing after it. The library retries nothing itself.
 */
export function createAdyenCommands(load: AdyenCheckoutLoader = requireLibrary): PaymentCommands {
  let library: AdyenCheckoutLibrary | undefined;
  const officialLibrary = (): AdyenCheckoutLibrary => {
    if (library) return library;
    try {
      library = load();
    } catch (err) {
      const missing = (err as { code?: unknown })?.code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes(PACKAGE);
      throw new Error(
        missing
          ? `adyen payment commands need the optional package ${PACKAGE}, which is not installed: npm install ${PACKAGE}`
          : `adyen payment commands could not load ${PACKAGE}: ${String((err as Error)?.message ?? err).split('\n')[0]}`,
      );
    }
    return library;
  };

  const commands: PaymentCommands = {
    types: ['refund', 'capture', 'void'],

    ready: (endpoint: ProviderEndpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',

    async send(command, target, context): Promise<CommandAnswer> {
      const { endpoint } = context;
      if (!commands.ready(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Adyen apiKey` };
      const apiKey = endpoint.apiKey!;
      let api: ModificationsApi;
      try {
        const pkg = officialLibrary();
        const http = toBaseUrl(new pkg.HttpURLConnectionClient(), (endpoint.apiBaseUrl ?? DEFAULT_ADYEN_CHECKOUT_API).replace(/\/+$/, ''));
        // TEST only picks the URL the library builds, which `toBaseUrl` replaces with the endpoint's.
        const client = new pkg.Client({ apiKey, environment: 'TEST', connectionTimeoutMillis: context.timeoutMs, applicationName: 'nestjs-payment-webhooks' }, http);
        api = new pkg.CheckoutAPI(client).ModificationsApi;
      } catch (err) {
        // Nothing was sent: the package is missing or unusable, which a retry does not fix.
        return { ok: false, retryable: false, reason: withoutKey((err as Error)?.message ?? String(err), apiKey) };
      }
      try {
        return await call(api, command, target, context);
      } catch (err) {
        return adyenFailure(err, apiKey);
      }
    },
  };
  return commands;
}

/** The built-in adyen provider's commands: the official package is required on the first command. */
export const adyenCommands: PaymentCommands = createAdyenCommands();
