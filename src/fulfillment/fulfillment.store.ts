import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { MicroBatcher } from '../common/micro-batcher';
import { PW_CONNECTION } from '../database/data-source';
import { idsOfRows } from '../database/bulk-sql';
import { deferWrites } from '../database/transaction';
import { Fulfillment, FulfillmentStatus } from './fulfillment.entity';

/** A connection or a transaction: what a read outside a transaction's own work runs on. */
type Queryable = Pick<EntityManager, 'query'>;

/** A move of a fulfillment's status, to write only if its row is still in `from`. */
export interface FulfillmentMove {
  fulfillment: Fulfillment;
  from: FulfillmentStatus;
}

/** The store of the table `fulfillments`: every statement on it, and the mapping of its rows. */
@Injectable()
export class FulfillmentStore {
  private readonly loader: MicroBatcher<string, Fulfillment | null>;

  constructor(@InjectDataSource(PW_CONNECTION) dataSource: DataSource) {
    this.loader = new MicroBatcher(
      async (ids) => {
        const byId = new Map((await this.findMany(dataSource, ids)).map((f) => [f.id, f]));
        return ids.map((id) => byId.get(id) ?? null);
      },
      { maxBatch: 100, maxInFlight: 2 },
    );
  }

  /**
   * Inserts requested fulfillments (with a stop already, when their order's money went back in the
   * same transaction), one statement for all, deferred to run with the transaction's
   * other writes (`deferWrites`); `then` gets how many were inserted (fewer than asked: an order
   * already had its one fulfillment, `UNIQUE(order_id)`).
   */
  async insertRequested(em: EntityManager, fulfillments: readonly Fulfillment[], then: (inserted: number) => unknown): Promise<void> {
    await deferWrites(em, [
      {
        key: 'fulfillments',
        sql: `INSERT INTO fulfillments (id, order_id, order_reference, status, carrier, ship_to, items, stop_reason, created_at, updated_at)
              SELECT r.id, r.order_id, r.order_reference, r.status, r.carrier, r.ship_to, r.items, r.stop_reason, r.created_at, r.updated_at
                FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, order_id uuid, order_reference text, status text, carrier text,
                     ship_to jsonb, items jsonb, stop_reason text, created_at timestamptz, updated_at timestamptz)
              ON CONFLICT (order_id) DO NOTHING
              RETURNING id`,
        params: [
          JSON.stringify(
            fulfillments.map((f) => ({
              id: f.id, order_id: f.orderId, order_reference: f.orderReference, status: f.status, carrier: f.carrier, ship_to: f.shipTo, items: f.items,
              // A fulfillment stopped in the transaction that requested it (the order paid and refunded in one batch).
              stop_reason: f.stopReason, created_at: f.createdAt, updated_at: f.updatedAt,
            })),
          ),
        ],
        then: (rows) => then(rows.length),
      },
    ]);
  }

  /**
   * The order's fulfillment, locked without waiting: a row another transaction holds is
   * FULFILLMENT.BUSY (that transaction fails and is retried) rather than a wait.
   */
  async lockOfOrder(em: EntityManager, orderId: string): Promise<Fulfillment | null> {
    try {
      const [row] = await em.query(`SELECT ${COLUMNS} FROM fulfillments WHERE order_id = $1 LIMIT 1 FOR UPDATE NOWAIT`, [orderId]);
      return row ? fulfillmentFromRow(row) : null;
    } catch (err) {
      if ((err as { driverError?: { code?: string } })?.driverError?.code === '55P03') {
        throw new DomainError('FULFILLMENT.BUSY', 'the fulfillment is being recorded; try again');
      }
      throw err;
    }
  }

  /** Writes a fulfillment's stop reason (only the stop writes it; a move never overwrites it). */
  async saveStop(em: EntityManager, f: Fulfillment): Promise<void> {
    await em.query(`UPDATE fulfillments SET stop_reason = $2, updated_at = $3 WHERE id = $1`, [f.id, f.stopReason, f.updatedAt]);
  }

  /**
   * Writes moves of status, one statement for all, each only if its row is still in the status the
   * move started from (whoever moved it first wins), deferred to run with the transaction's other
   * writes (`deferWrites`); `then` gets the ids written.
   */
  async saveMoves(em: EntityManager, moves: readonly FulfillmentMove[], then: (written: Set<string>) => unknown): Promise<void> {
    await deferWrites(em, [
      {
        key: 'fulfillments',
        sql: `UPDATE fulfillments f
                 SET status = r.status, shipment_id = r.shipment_id, last_error = r.last_error, dispatched_at = r.dispatched_at, updated_at = r.updated_at
                FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, "from" text, status text, shipment_id text, last_error text,
                     dispatched_at timestamptz, updated_at timestamptz)
               WHERE f.id = r.id AND f.id = ${idsOfRows('$1::jsonb')} AND f.status = r."from"
           RETURNING f.id`,
        params: [
          JSON.stringify(
            moves.map(({ fulfillment: m, from }) => ({
              id: m.id, from, status: m.status, shipment_id: m.shipmentId, last_error: m.lastError, dispatched_at: m.dispatchedAt, updated_at: m.updatedAt,
            })),
          ),
        ],
        then: (rows) => then(new Set(rows.map((r) => r.id as string))),
      },
    ]);
  }

  /** The id of an order's fulfillment, not locked (an order has one, once paid). */
  async idOfOrder(db: Queryable, orderId: string): Promise<string | null> {
    const [row] = await db.query(`SELECT id FROM fulfillments WHERE order_id = $1 LIMIT 1`, [orderId]);
    return row ? (row.id as string) : null;
  }

  async find(db: Queryable, id: string): Promise<Fulfillment | null> {
    const [found] = await this.findMany(db, [id]);
    return found ?? null;
  }

  /** Reads a fulfillment outside any transaction; reads asked for at the same moment share one statement. */
  load(id: string): Promise<Fulfillment | null> {
    return this.loader.submit(id);
  }

  private async findMany(db: Queryable, ids: readonly string[]): Promise<Fulfillment[]> {
    const rows: Array<Record<string, unknown>> = await db.query(`SELECT ${COLUMNS} FROM fulfillments WHERE id = ANY($1::uuid[])`, [ids]);
    return rows.map(fulfillmentFromRow);
  }

  /**
   * The orders shipped under more than one shipment id (the operator's reconciliation). Static, so
   * the admin route and the command line, which has no Nest application, run it on any connection.
   */
  static async ordersWithSeveralShipments(db: Queryable): Promise<string[]> {
    const rows: Array<{ order_id: string }> = await db.query(
      `SELECT order_id FROM fulfillments WHERE shipment_id IS NOT NULL
        GROUP BY order_id HAVING count(DISTINCT shipment_id) > 1`,
    );
    return rows.map((r) => r.order_id);
  }
}

const COLUMNS =
  'id, order_id, order_reference, status, carrier, ship_to, items, shipment_id, last_error, stop_reason, created_at, updated_at, dispatched_at';

/** A fulfillment from its row (COLUMNS). */
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
