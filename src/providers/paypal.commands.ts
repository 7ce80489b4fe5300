import { Controllers, createPaypalClients, credentialsOf, PAYPAL_PACKAGE, paypalClients, PaypalClients, paypalFailure, PaypalOrder, PaypalSdkPackage } from './paypal-client';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands } from './provider';

export { PAYPAL_PACKAGE };
export type { PaypalSdkPackage };

/** PayPal shows at most 255 characters of a refund's note to the payer. */
const NOTE_MAX = 255;

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
export function createPaypalCommands(source: PaypalClients | (() => PaypalSdkPackage | null)): PaymentCommands & { installed(): boolean } {
  const clients = typeof source === 'function' ? createPaypalClients(source) : source;

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
    installed: () => clients.installed(),

    ready: (endpoint) => credentialsOf(endpoint) !== null,

    async send(command, target, context: CommandContext): Promise<CommandAnswer> {
      const { endpoint, idempotencyKey, timeoutMs } = context;
      const credentials = credentialsOf(endpoint);
      if (!credentials) return refused(`endpoint "${endpoint.id}" has no PayPal clientId and clientSecret`);
      const controllers = clients.controllersFor(endpoint, credentials, timeoutMs);
      // The package is missing (installing it and retrying the dead message sends the same key).
      if (controllers === null) return refused(`the ${PAYPAL_PACKAGE} package is not installed: npm install ${PAYPAL_PACKAGE}`);
      try {
        if (command.type === 'refund') return await refund(controllers, command, target, idempotencyKey);
        if (command.type === 'capture') return await capture(controllers, command, target, idempotencyKey);
        return await voidOrder(controllers, target, idempotencyKey);
      } catch (err) {
        return paypalFailure(err, [credentials.clientSecret]);
      }
    },
  };
}

/** The built-in PayPal provider's commands (`@paypal/paypal-server-sdk`, loaded the first time a command is sent). */
export const paypalCommands = createPaypalCommands(paypalClients);
