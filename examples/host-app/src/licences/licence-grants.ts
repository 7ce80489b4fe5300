import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { OnPaymentEvent, type PaymentWebhooksEvent } from 'nestjs-payment-webhooks';
import { DataSource, EntityManager } from 'typeorm';
import { CREATE_LICENCES_TABLE, Licence } from './licence.entity.js';

/**
 * Grants a licence when an order is paid and revokes it when it is refunded. Nothing registers
 * these methods by hand: the module finds `@OnPaymentEvent` on any provider of the app at start.
 */
@Injectable()
export class LicenceGrants implements OnModuleInit {
  // The host's own default connection (not the module's).
  constructor(@InjectDataSource() private readonly host: DataSource) {}

  /** Created idempotently at start, like public.orders (a real host runs a migration of its own). */
  async onModuleInit(): Promise<void> {
    await this.host.query(CREATE_LICENCES_TABLE);
  }

  /**
   * In the transaction that marks the order paid: the licence commits with the order's change or
   * not at all, and a throw here rolls the change back (the webhook is processed again).
   * `em` is the MODULE's connection, whose search_path is its own schema (`payment_webhooks`) and
   * which knows none of the host's entities: hence plain SQL naming `public.licences`, not
   * `em.getRepository(Licence)`. The call happens once per change; ON CONFLICT is only a belt.
   */
  @OnPaymentEvent('order.paid', { inTransaction: true })
  async grant(event: PaymentWebhooksEvent<'order.paid'>, em: EntityManager): Promise<void> {
    await em.query(
      `INSERT INTO public.licences (order_id, granted_at, event_id) VALUES ($1, now(), $2) ON CONFLICT (order_id) DO NOTHING`,
      [event.data.order.id, event.id],
    );
  }

  /**
   * After the refund has committed, on the module's workers, at least once (a throw is retried):
   * a DELETE is idempotent, so a second delivery of the same event changes nothing.
   */
  @OnPaymentEvent('order.refunded')
  async revoke(event: PaymentWebhooksEvent<'order.refunded'>): Promise<void> {
    await this.host.getRepository(Licence).delete({ orderId: event.data.order.id });
  }

  list(): Promise<Licence[]> {
    return this.host.getRepository(Licence).find({ order: { grantedAt: 'ASC' } });
  }
}
