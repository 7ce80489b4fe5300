import { failedCall } from './command-answers';
import { watchKeyedCall } from './keyed-call';
import { optionalPackage } from './optional-package';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';
import type { MollieClientPackage, MollieCommandClient } from './mollie-client';

const PACKAGE = '@mollie/api-client';
/** The header Mollie reads the idempotency key from (the client sends `idempotencyKey` there). */
const KEY_HEADER = 'Idempotency-Key';
/** Mollie shows at most 140 characters of a refund's description on the consumer's statement. */
const DESCRIPTION_MAX = 140;

/**
 * Mollie's client for an endpoint: built once per (endpoint id, API key, base URL) and kept, since
 * it holds nothing but those (no token, no session) and building one makes a few dozen objects and
 * an HTTPS agent. A changed key or URL builds a new one.
 */
interface Cached {
  apiKey: string;
  apiBaseUrl: string;
  client: MollieCommandClient;
}

/** The body of a Mollie error, as the client read it (`ApiError`: its message is Mollie's `detail`). */
interface MollieFailure {
  message?: unknown;
  statusCode?: unknown;
  field?: unknown;
}

/** A reason that never carries the key, whatever the client put in its message. */
function reasonOf(err: unknown, apiKey: string): string {
  const failure = (err ?? {}) as MollieFailure;
  const message = typeof failure.message === 'string' && failure.message !== '' ? failure.message : 'Mollie failed';
  const field = typeof failure.field === 'string' ? ` (field ${failure.field})` : '';
  return `${message}${field}`.split(apiKey).join('[redacted]');
}

/** A refund as Mollie answered it: accepted, `succeeded` once its status is `refunded`. */
function refundAnswer(refund: { id?: unknown; status?: unknown }): CommandAnswer {
  const id = typeof refund.id === 'string' ? refund.id : null;
  if (refund.status === 'failed' || refund.status === 'canceled') {
    return { ok: false, retryable: false, reason: `Mollie answered refund ${id ?? '(no id)'} ${refund.status}` };
  }
  return { ok: true, providerRefundId: id, status: refund.status === 'refunded' ? 'succeeded' : 'pending' };
}

/** How a call ended: the client's answer, its throw, or a 5xx seen before the client let go of it. */
type Outcome = { answer: CommandAnswer } | { failed: unknown } | { serverError: { status: number; retryAfter: string | null } };

/** `promise`, or `'timeout'` after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Refunds, captures and voids through `@mollie/api-client` (docs/commands.md#mollie):
 * `paymentRefunds.create`, `paymentCaptures.create`, `payments.cancel`, each with the command's key
 * as `idempotencyKey` (the client's `Idempotency-Key` header). The client retries a 5xx itself and
 * reports neither an answer's `Retry-After` nor a status it cannot parse from the body: each call is
 * watched on Node's HTTP diagnostics channels (keyed-call.ts), which read the status and
 * `Retry-After` of the one request sent and stop the client's retry before it leaves.
 */
export function createMollieCommands(clientPackage: () => MollieClientPackage | null): PaymentCommands {
  const clients = new Map<string, Cached>();

  function clientFor(endpoint: ProviderEndpoint & { apiKey: string; apiBaseUrl: string }): MollieCommandClient | null {
    const cached = clients.get(endpoint.id);
    if (cached && cached.apiKey === endpoint.apiKey && cached.apiBaseUrl === endpoint.apiBaseUrl) return cached.client;
    const pkg = clientPackage();
    if (!pkg) return null;
    const client = pkg.createMollieClient({ apiKey: endpoint.apiKey, apiEndpoint: `${endpoint.apiBaseUrl.replace(/\/+$/, '')}/v2/` }) as unknown as MollieCommandClient;
    clients.set(endpoint.id, { apiKey: endpoint.apiKey, apiBaseUrl: endpoint.apiBaseUrl, client });
    return client;
  }

  /** The one client call a command is, with the key as Mollie's idempotency key. */
  async function call(client: MollieCommandClient, command: PaymentCommand, target: CommandTarget, idempotencyKey: string): Promise<CommandAnswer> {
    const paymentId = target.providerPaymentId;
    if (command.type === 'refund') {
      const refund = await client.paymentRefunds.create({
        paymentId,
        amount: { currency: command.amount.currency, value: command.amount.decimal },
        ...(command.reason ? { description: command.reason.slice(0, DESCRIPTION_MAX) } : {}),
        idempotencyKey,
      });
      return refundAnswer(refund);
    }
    if (command.type === 'capture') {
      await client.paymentCaptures.create({ paymentId, amount: { currency: command.amount.currency, value: command.amount.decimal }, idempotencyKey });
      return { ok: true };
    }
    await client.payments.cancel(paymentId, { idempotencyKey });
    return { ok: true };
  }

  return {
    types: ['refund', 'capture', 'void'],

    ready: (endpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',

    async send(command, target, context: CommandContext): Promise<CommandAnswer> {
      const { endpoint, idempotencyKey, timeoutMs } = context;
      if (!endpoint.apiKey) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Mollie API key` };
      const apiKey = endpoint.apiKey;
      const client = clientFor({ ...endpoint, apiKey, apiBaseUrl: endpoint.apiBaseUrl ?? 'https://api.mollie.com' });
      // The package is missing (installing it and retrying the dead message sends the same key).
      if (client === null) return { ok: false, retryable: false, reason: `the ${PACKAGE} package is not installed: npm install ${PACKAGE}` };
      const watched = watchKeyedCall(KEY_HEADER, idempotencyKey);
      const calling: Promise<Outcome> = call(client, command, target, idempotencyKey).then(
        (answer) => ({ answer }),
        (failed: unknown) => ({ failed }),
      );
      // Watched until the client gives up: its own retry of a 5xx, made after a pause, is stopped too.
      void calling.finally(() => watched.end());
      // A 5xx is answered at once: the client would otherwise pause 2 s (or the Retry-After) to retry.
      const serverError = watched.answered.then((answer): Outcome | Promise<Outcome> => (answer.status >= 500 ? { serverError: answer } : calling));
      const result = await within(Promise.race([calling, serverError]), timeoutMs);
      if (result === 'timeout') {
        watched.abort();
        return failedCall(null, `Mollie did not answer within ${timeoutMs} ms`);
      }
      if ('serverError' in result) return failedCall(result.serverError.status, `Mollie answered ${result.serverError.status}`, result.serverError.retryAfter);
      if ('answer' in result) return result.answer;
      // The status of the answer as it came (a body Mollie's client could not read still had one).
      const failure = result.failed as MollieFailure;
      const status = watched.answer?.status ?? (typeof failure.statusCode === 'number' ? failure.statusCode : null);
      return failedCall(status, reasonOf(failure, apiKey), watched.answer?.retryAfter ?? null);
    },
  };
}

/** The built-in Mollie provider's commands (`@mollie/api-client`, loaded the first time a command is sent). */
export const mollieCommands: PaymentCommands = createMollieCommands(optionalPackage(PACKAGE, () => require(PACKAGE) as MollieClientPackage));
