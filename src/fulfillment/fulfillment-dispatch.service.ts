import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { MetricsService } from '../observability/metrics.service';
import { OutboxMessage } from '../outbox/outbox-message.entity';
import { PW_OPTIONS } from '../payment-webhooks.constants';
import { Order } from '../payments/order.entity';
import { CarrierRegistry } from './carriers/carrier-registry';
import type { ShipmentResult } from './carriers/carrier';
import { Fulfillment } from './fulfillment.entity';

/** What the processor does with the job next. */
export type DispatchStep = { done: true; outcome: 'dispatched' | 'dead' | 'nothing_to_do' } | { done: false; retryAt: Date };

/**
 * Delivers one `fulfillment.dispatch` message to its carrier. The call carries
 * `Idempotency-Key` = fulfillment id on every try, forever; the carrier's answer is recorded in
 * one transaction (message and fulfillment, and the order becomes fulfilled). A crash between the
 * carrier's yes and that commit replays the same key, and the carrier answers the same shipment.
 */
@Injectable()
export class FulfillmentDispatchService {
  private readonly logger = new Logger('FulfillmentDispatch');

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly carriers: CarrierRegistry,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly metrics: MetricsService,
  ) {}

  async dispatch(messageId: string): Promise<DispatchStep> {
    // Scheduling runs on the database's clock, the one the sweeper and the writer use too.
    const [message]: Array<{ status: string; payload: Record<string, unknown>; nextAttemptAt: Date; due: boolean; called: boolean }> =
      await this.dataSource.query(
        `SELECT status, payload, next_attempt_at AS "nextAttemptAt", next_attempt_at <= now() AS due,
                last_call_at IS NOT NULL AS called
           FROM outbox_message WHERE id = $1`,
        [messageId],
      );
    if (!message || message.status !== 'pending') return { done: true, outcome: 'nothing_to_do' };
    // Enqueued early (a sweep, a notification racing a retry): wait for the message's own time.
    if (!message.due) return { done: false, retryAt: message.nextAttemptAt };

    const fulfillmentId = String(message.payload.fulfillmentId);
    const fulfillment = await this.dataSource.getRepository(Fulfillment).findOne({ where: { id: fulfillmentId } });
    const order = fulfillment
      ? await this.dataSource.getRepository(Order).findOne({ where: { id: fulfillment.orderId } })
      : null;
    if (!fulfillment || !order) return this.record(messageId, { ok: false, retryable: false, reason: 'fulfillment or order not found' });
    // The money went back (or the order was called off) while the shipment waited: do not ship.
    // If a call already began (a worker died during it, or it timed out), the carrier may have
    // shipped: say so, for the operator to confirm with the carrier under the same key.
    if (order.status === 'refunded' || order.status === 'canceled') {
      const reason = message.called
        ? `order ${order.status} after a carrier call began that may have shipped (Idempotency-Key ${fulfillment.id}): confirm with the carrier`
        : `order ${order.status}`;
      return this.record(messageId, { ok: false, retryable: false, reason, status: 'not_called' });
    }

    const carrier = this.carriers.get(fulfillment.carrier);
    if (!carrier) {
      return this.record(messageId, { ok: false, retryable: false, reason: `carrier "${fulfillment.carrier}" is not configured` });
    }
    // Committed before the call: a crash during it leaves this trace behind.
    await this.dataSource.query(`UPDATE outbox_message SET last_call_at = now() WHERE id = $1 AND status = 'pending'`, [messageId]);
    let result: ShipmentResult;
    const timer = this.metrics.carrierDuration.labels(carrier.name).startTimer();
    try {
      result = await carrier.ship(
        { orderId: order.id, orderReference: order.reference, shipTo: order.shipTo, items: order.items },
        fulfillment.id,
      );
    } catch (err) {
      result = {
        ok: false,
        retryable: true,
        reason: `carrier adapter failed: ${(err as Error)?.message ?? String(err)}`,
        status: 'adapter_error',
        mayHaveShipped: true,
      };
    }
    timer();
    this.metrics.carrierCalls.labels(carrier.name, result.status ?? (result.ok ? 'ok' : 'failed')).inc();
    return this.record(messageId, result);
  }

  /** Records the carrier's answer, under the message's row lock; only a pending message changes. */
  private async record(messageId: string, result: ShipmentResult): Promise<DispatchStep> {
    return this.dataSource.transaction(async (em) => {
      const message = await em
        .getRepository(OutboxMessage)
        .findOne({ where: { id: messageId }, lock: { mode: 'pessimistic_write' } });
      if (!message || message.status !== 'pending') return { done: true, outcome: 'nothing_to_do' } as const;
      const [{ now }]: Array<{ now: Date }> = await em.query(`SELECT now() AS now`);
      const attempts = message.attempts + 1;
      const fulfillments = em.getRepository(Fulfillment);
      const fulfillment = await fulfillments.findOne({
        where: { id: String(message.payload.fulfillmentId) },
        lock: { mode: 'pessimistic_write' },
      });

      if (result.ok) {
        await em.getRepository(OutboxMessage).update(
          { id: messageId },
          { status: 'dispatched', attempts, lastError: null, dispatchedAt: now },
        );
        if (fulfillment?.dispatched(result.shipmentId, now)) {
          await fulfillments.update(
            { id: fulfillment.id },
            { status: fulfillment.status, shipmentId: fulfillment.shipmentId, lastError: null, dispatchedAt: now, updatedAt: now },
          );
          const orders = em.getRepository(Order);
          const order = await orders.findOne({ where: { id: fulfillment.orderId }, lock: { mode: 'pessimistic_write' } });
          if (order && order.markFulfilled(now).outcome === 'applied') {
            await orders.update({ id: order.id }, { status: order.status, updatedAt: order.updatedAt });
          }
        }
        return { done: true, outcome: 'dispatched' } as const;
      }

      const dead = !result.retryable || attempts >= this.options.carrierMaxAttempts;
      if (dead) {
        const reason = result.retryable ? `${result.reason} (after ${attempts} attempts)` : result.reason;
        await em.getRepository(OutboxMessage).update({ id: messageId }, { status: 'dead', attempts, lastError: reason });
        if (fulfillment?.failed(reason, now)) {
          await fulfillments.update({ id: fulfillment.id }, { status: fulfillment.status, lastError: reason, updatedAt: now });
        }
        this.logger.warn(`outbox message ${messageId} is dead: ${reason}`);
        return { done: true, outcome: 'dead' } as const;
      }
      const retryAt = new Date(now.getTime() + this.backoff(attempts, result.retryAfterMs));
      // A clear refusal under an idempotent key shipped nothing, so the trace of the call goes; a
      // call that may have shipped (no answer, a 2xx without an id) leaves it.
      await em
        .getRepository(OutboxMessage)
        .update(
          { id: messageId },
          { attempts, lastError: result.reason, nextAttemptAt: retryAt, ...(result.mayHaveShipped ? {} : { lastCallAt: null }) },
        );
      return { done: false, retryAt } as const;
    });
  }

  /**
   * From the base, doubling, capped (CONTRACT §5): attempt n waits at least base·2^(n−1), plus up
   * to half of it again at random so that messages failing together do not retry together; never
   * more than the cap. A carrier's Retry-After is honoured, under the same cap.
   */
  backoff(attempts: number, retryAfterMs?: number): number {
    const { carrierBackoffBaseMs: base, carrierBackoffCapMs: cap } = this.options.tuning;
    const nominal = Math.min(cap, base * 2 ** Math.min(attempts - 1, 30));
    const delay = nominal * (1 + Math.random() / 2);
    return Math.min(cap, Math.max(delay, retryAfterMs ?? 0));
  }
}
