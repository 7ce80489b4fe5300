import { SetMetadata } from '@nestjs/common';
import type { PaymentEventType } from '../common/host-events';

export const ON_PAYMENT_EVENT = 'payment-webhooks:on-payment-event';

export interface OnPaymentEventOptions {
  /**
   * Called inside the transaction that makes the change, with `(event, entityManager)`: what it
   * writes through that EntityManager commits or rolls back with the change, once; a throw rolls
   * the change back (a webhook's processing is then retried; an API action answers 500). Default
   * false: called after the commit, on the workers, at least once, with `(event)`.
   */
  inTransaction?: boolean;
}

export interface OnPaymentEventMetadata {
  types: readonly string[] | '*';
  options: OnPaymentEventOptions;
}

/**
 * Marks a method of any provider of the host as a subscriber to the module's events: a type
 * (`'order.paid'`), an array of types, or `'*'`. Found at start; an unknown type is a
 * start-up error naming it.
 *
 * ```ts
 * @Injectable()
 * export class Licences {
 *   @OnPaymentEvent('order.paid', { inTransaction: true })
 *   async grant(event: PaymentWebhooksEvent, em: EntityManager) { … }
 *
 *   @OnPaymentEvent(['order.refunded', 'payment.disputed'])
 *   async revoke(event: PaymentWebhooksEvent) { … }   // deduplicate on event.id
 * }
 * ```
 */
export function OnPaymentEvent(types: PaymentEventType | readonly PaymentEventType[] | '*', options: OnPaymentEventOptions = {}): MethodDecorator {
  const metadata: OnPaymentEventMetadata = { types: types === '*' ? '*' : typeof types === 'string' ? [types] : [...types], options };
  return SetMetadata(ON_PAYMENT_EVENT, metadata);
}
