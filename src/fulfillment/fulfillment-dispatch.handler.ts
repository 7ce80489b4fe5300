import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ResolvedOptions } from '../config/options';
import { MetricsService } from '../observability/metrics.service';
import { OutboxAttempt, OutboxHandler, OutboxHandlers } from '../outbox/outbox-handler';
import type { AttemptDecision, HandlerOutcome } from '../outbox/outbox.state';
import { PW_OPTIONS } from '../config/tokens';
import { CarrierRegistry } from './carriers/carrier-registry';
import { isUsableShipmentId, ShipmentResult } from './carriers/carrier';
import { Fulfillment } from './fulfillment.entity';
import { FULFILLMENT_DISPATCH, FulfillmentDispatchPayload, FulfillmentService } from './fulfillment.service';
import { FulfillmentStore } from './fulfillment.store';

/**
 * The `fulfillment.dispatch` handler: one carrier call with `Idempotency-Key` = fulfillment id, on
 * every try, forever. A crash between the carrier's yes and the commit replays the same key, and
 * the carrier answers the same shipment. The outbox records the attempt; this handler's share of
 * that transaction marks the fulfillment dispatched (the order follows, through its event) or
 * failed.
 */
@Injectable()
export class FulfillmentDispatchHandler implements OutboxHandler<FulfillmentDispatchPayload>, OnModuleInit {
  readonly maxAttempts: number;
  /** The fulfillment each attempt read before its call, for the recording of its end. */
  private readonly readBeforeCall = new WeakMap<OutboxAttempt<FulfillmentDispatchPayload>, Fulfillment>();

  constructor(
    private readonly carriers: CarrierRegistry,
    private readonly fulfillments: FulfillmentService,
    private readonly store: FulfillmentStore,
    private readonly handlers: OutboxHandlers,
    private readonly metrics: MetricsService,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    this.maxAttempts = options.carrierMaxAttempts;
  }

  onModuleInit(): void {
    this.handlers.register(FULFILLMENT_DISPATCH, this);
  }

  async handle(attempt: OutboxAttempt<FulfillmentDispatchPayload>): Promise<HandlerOutcome> {
    const fulfillment = await this.store.load(String(attempt.payload.fulfillmentId));
    if (!fulfillment) return { kind: 'dead', reason: 'fulfillment not found' };
    this.readBeforeCall.set(attempt, fulfillment);
    // The money went back (or the order was called off) while the shipment waited: do not ship.
    // If a call already began (a worker died during it, or it timed out), the carrier may have
    // shipped: say so, for the operator to confirm with the carrier under the same key.
    if (fulfillment.stopReason !== null) {
      const why = fulfillment.stopReason;
      return {
        kind: 'dead',
        reason: attempt.previousCallAt
          ? `${why} after a carrier call began that may have shipped (Idempotency-Key ${fulfillment.id}): confirm with the carrier`
          : why,
      };
    }
    if (fulfillment.status === 'dispatched') return { kind: 'done', result: { shipmentId: fulfillment.shipmentId } };
    const carrier = this.carriers.get(fulfillment.carrier);
    if (!carrier) return { kind: 'dead', reason: `carrier "${fulfillment.carrier}" is not configured` };

    let result: ShipmentResult;
    const timer = this.metrics.carrierDuration.labels(carrier.name).startTimer();
    try {
      result = await carrier.ship(
        { orderId: fulfillment.orderId, orderReference: fulfillment.orderReference, shipTo: fulfillment.shipTo, items: fulfillment.items },
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
    // A host adapter's id is held to the same rule as an HTTP carrier's: one that cannot be kept is
    // no id (the carrier may have shipped: the same key asks again), never a success.
    if (result.ok && !isUsableShipmentId(result.shipmentId)) {
      result = {
        ok: false,
        retryable: true,
        reason: `carrier ${carrier.name} answered an unusable shipment id`,
        status: NO_SHIPMENT_ID,
        mayHaveShipped: true,
      };
    }
    this.metrics.carrierCalls.labels(carrier.name, callLabel(result)).inc();
    if (result.ok) return { kind: 'done', result: { shipmentId: result.shipmentId } };
    if (!result.retryable) return { kind: 'dead', reason: result.reason };
    return { kind: 'retry', reason: result.reason, retryAfterMs: result.retryAfterMs, mayHaveHappened: result.mayHaveShipped === true };
  }

  /**
   * The attempt's end, for the fulfillment: the one read before the call decides the move, and the
   * write is guarded by the status it was read in (a second recorder finds it moved and does
   * nothing), so no second read is needed. A refund's stop recorded meanwhile is left as it is.
   */
  async recorded(em: EntityManager, attempt: OutboxAttempt<FulfillmentDispatchPayload>, outcome: HandlerOutcome, decision: AttemptDecision): Promise<void> {
    if (decision.status === 'pending') return;
    // A copy: a recording that fails rolls back, and the fallback that records the attempt must
    // find the fulfillment as it was read, not as the failed recording left it in memory.
    const read = this.readBeforeCall.get(attempt);
    const fulfillment = read ? Object.assign(new Fulfillment(), read) : await this.store.find(em, String(attempt.payload.fulfillmentId));
    if (!fulfillment) return;
    // Its own list of moves, not the one it shares with the copy's source.
    fulfillment.takeMoves();
    const from = fulfillment.status;
    const now = new Date();
    const moved =
      decision.status === 'dispatched'
        ? fulfillment.dispatched(String((outcome.kind === 'done' && outcome.result?.shipmentId) || ''), now)
        : fulfillment.failed(decision.reason, now);
    // The carrier's answer moved it (or the attempts ran out, or it was refused): its shipment, if any.
    if (moved) this.fulfillments.saveMove(em, fulfillment, from, { kind: 'carrier', shipmentId: fulfillment.shipmentId });
  }

  async retried(em: EntityManager, message: { payload: FulfillmentDispatchPayload }): Promise<void> {
    const fulfillment = await this.store.find(em, String(message.payload.fulfillmentId));
    if (!fulfillment) return;
    const from = fulfillment.status;
    if (fulfillment.requestAgain()) this.fulfillments.saveMove(em, fulfillment, from, { kind: 'api', action: 'retry' });
  }
}

/** The metrics label of a 2xx (or an adapter's yes) that carried no usable shipment id: not a success. */
export const NO_SHIPMENT_ID = 'no_shipment_id';

/** `pw_carrier_calls_total`'s status: the HTTP status of a shipment, `no_shipment_id` for a 2xx without one. */
function callLabel(result: ShipmentResult): string {
  if (result.ok) return result.status ?? 'ok';
  if (result.status && /^2\d\d$/.test(result.status)) return NO_SHIPMENT_ID;
  return result.status ?? 'failed';
}
