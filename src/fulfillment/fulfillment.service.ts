import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { MicroBatcher } from '../common/micro-batcher';
import { PW_CONNECTION } from '../database/data-source';
import { rowsReturned } from '../database/returning';
import { beforeCommit, TransactionState } from '../database/transaction';
import type { OrderSnapshot } from '../common/payment-events';
import { OutboxHandlers } from '../outbox/outbox-handler';
import { OutboxWriter } from '../outbox/outbox-writer';
import { TransactionEvents } from '../outbox/transaction-events';
import { Fulfillment } from './fulfillment.entity';

export const FULFILLMENT_DISPATCH = 'fulfillment.dispatch';

/** The payload of a `fulfillment.dispatch` message. */
export interface FulfillmentDispatchPayload {
  fulfillmentId: string;
  orderId: string;
}

/**
 * The Fulfillment aggregate's use cases, as reactions inside the transactions that change an
 * order: an order that became paid requests its one fulfillment (and the outbox message that
 * ships it); an order refunded before its shipment left cancels it. Each change of a fulfillment
 * is announced in the same transaction (the order keeps track of it).
 */
@Injectable()
export class FulfillmentService implements OnModuleInit {
  private readonly requested = new TransactionState<{ fulfillments: Fulfillment[]; scheduled: boolean }>(() => ({ fulfillments: [], scheduled: false }));
  private readonly moves = new TransactionState<{ moves: Array<{ fulfillment: Fulfillment; from: Fulfillment['status'] }>; scheduled: boolean }>(
    () => ({ moves: [], scheduled: false }),
  );
  private readonly loader: MicroBatcher<string, Fulfillment | null>;

  constructor(
    private readonly events: TransactionEvents,
    private readonly outbox: OutboxWriter,
    handlers: OutboxHandlers,
    @InjectDataSource(PW_CONNECTION) dataSource: DataSource,
  ) {
    handlers.declareWritten(FULFILLMENT_DISPATCH, 'fulfillment');
    this.loader = new MicroBatcher(
      async (ids) => {
        const rows = await dataSource.query(`SELECT ${FULFILLMENT_COLUMNS} FROM fulfillments WHERE id = ANY($1::uuid[])`, [ids]);
        const byId = new Map<string, Fulfillment>(rows.map((r: Record<string, unknown>) => [r.id as string, fulfillmentFromRow(r)]));
        return ids.map((id) => byId.get(id) ?? null);
      },
      { maxBatch: 100, maxInFlight: 2 },
    );
  }

  onModuleInit(): void {
    this.events.on(['order.paid'], (event, em) => this.request(em, event.data.order));
    this.events.on(['order.refunded', 'order.canceled'], (event, em) => this.stop(em, event.data.order.id, `order ${event.data.order.status}`));
  }

  /**
   * Requests the order's one fulfillment, and its outbox message, in the caller's transaction
   * (written at its end with every other one it requests, in one statement). An order becomes paid
   * once (its row lock serialises every path there), so a second request is a bug:
   * `UNIQUE(order_id)` refuses it, and the transaction rolls back rather than ship twice.
   */
  async request(em: EntityManager, order: OrderSnapshot): Promise<string> {
    const fulfillment = Fulfillment.request(order);
    const pending = this.requested.of(em);
    pending.fulfillments.push(fulfillment);
    if (!pending.scheduled) {
      pending.scheduled = true;
      beforeCommit(em, async () => {
        pending.scheduled = false;
        const rows = pending.fulfillments.splice(0);
        const inserted: unknown[] = await em.query(
          `INSERT INTO fulfillments (id, order_id, order_reference, status, carrier, ship_to, items, created_at, updated_at)
           SELECT r.id, r.order_id, r.order_reference, r.status, r.carrier, r.ship_to, r.items, r.created_at, r.created_at
             FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, order_id uuid, order_reference text, status text, carrier text,
                  ship_to jsonb, items jsonb, created_at timestamptz)
           ON CONFLICT (order_id) DO NOTHING
           RETURNING id`,
          [JSON.stringify(rows.map((f) => ({ id: f.id, order_id: f.orderId, order_reference: f.orderReference, status: f.status, carrier: f.carrier, ship_to: f.shipTo, items: f.items, created_at: f.createdAt })))],
        );
        if (inserted.length < rows.length) throw new Error('an order already has its fulfillment: refusing a second one');
      });
    }
    this.outbox.addLater(em, {
      type: FULFILLMENT_DISPATCH,
      payload: { fulfillmentId: fulfillment.id, orderId: order.id } satisfies FulfillmentDispatchPayload,
      // The carrier's Idempotency-Key is the fulfillment id, forever: one message per fulfillment.
      idempotencyKey: fulfillment.id,
    });
    await this.announce(em, fulfillment);
    return fulfillment.id;
  }

  /**
   * A requested fulfillment of an order whose money went back never ships. The row is taken
   * without waiting: a dispatch recording its answer holds it and then the order (the other lock
   * order), so rather than risk a deadlock this transaction fails and is retried.
   */
  private async stop(em: EntityManager, orderId: string, reason: string): Promise<void> {
    let fulfillment: Fulfillment | null;
    try {
      fulfillment = await em.getRepository(Fulfillment).findOne({ where: { orderId }, lock: { mode: 'pessimistic_write', onLocked: 'nowait' } });
    } catch (err) {
      if ((err as { driverError?: { code?: string } })?.driverError?.code === '55P03') {
        throw new DomainError('FULFILLMENT.BUSY', 'the fulfillment is being recorded; try again');
      }
      throw err;
    }
    if (!fulfillment?.stop(reason)) return;
    await em.query(`UPDATE fulfillments SET stop_reason = $2, updated_at = $3 WHERE id = $1`, [fulfillment.id, fulfillment.stopReason, fulfillment.updatedAt]);
  }

  async find(em: EntityManager, id: string): Promise<Fulfillment | null> {
    const [row] = await em.query(`SELECT ${FULFILLMENT_COLUMNS} FROM fulfillments WHERE id = $1`, [id]);
    return row ? fulfillmentFromRow(row) : null;
  }

  /** Reads a fulfillment outside any transaction; reads asked for at the same moment share one statement. */
  load(id: string): Promise<Fulfillment | null> {
    return this.loader.submit(id);
  }

  /**
   * The fulfillment's one persist function for a move of its status, at the end of the caller's
   * transaction (with every other move it asks for, in one statement): written only if the row is
   * still in the status the move started from (whoever moved it first wins; the other writes
   * nothing), and announced only then. The stop reason is the refund's to write, never overwritten.
   */
  saveMove(em: EntityManager, f: Fulfillment, from: Fulfillment['status']): void {
    const pending = this.moves.of(em);
    pending.moves.push({ fulfillment: f, from });
    if (pending.scheduled) return;
    pending.scheduled = true;
    beforeCommit(em, async () => {
      pending.scheduled = false;
      const moves = pending.moves.splice(0);
      const written = await rowsReturned<{ id: string }>(
        em,
        `UPDATE fulfillments f
            SET status = r.status, shipment_id = r.shipment_id, last_error = r.last_error, dispatched_at = r.dispatched_at, updated_at = r.updated_at
           FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, "from" text, status text, shipment_id text, last_error text,
                dispatched_at timestamptz, updated_at timestamptz)
          WHERE f.id = r.id AND f.status = r."from"
        RETURNING f.id`,
        [
          JSON.stringify(
            moves.map(({ fulfillment: m, from }) => ({
              id: m.id, from, status: m.status, shipment_id: m.shipmentId, last_error: m.lastError, dispatched_at: m.dispatchedAt, updated_at: m.updatedAt,
            })),
          ),
        ],
      );
      const kept = new Set(written.map((w) => w.id));
      for (const { fulfillment } of moves) if (kept.has(fulfillment.id)) await this.announce(em, fulfillment);
    });
  }

  private announce(em: EntityManager, f: Fulfillment): Promise<void> {
    return this.events.publish(em, {
      type: 'internal.fulfillment.changed',
      fulfillment: { id: f.id, orderId: f.orderId, status: f.status, carrier: f.carrier, shipmentId: f.shipmentId },
    });
  }
}

const FULFILLMENT_COLUMNS =
  'id, order_id, order_reference, status, carrier, ship_to, items, shipment_id, last_error, stop_reason, created_at, updated_at, dispatched_at';

function fulfillmentFromRow(r: Record<string, any>): Fulfillment {
  return Object.assign(new Fulfillment(), {
    id: r.id,
    orderId: r.order_id,
    orderReference: r.order_reference,
    status: r.status,
    carrier: r.carrier,
    shipTo: r.ship_to,
    items: r.items,
    shipmentId: r.shipment_id,
    lastError: r.last_error,
    stopReason: r.stop_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    dispatchedAt: r.dispatched_at,
  });
}
