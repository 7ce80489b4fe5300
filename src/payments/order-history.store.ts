import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { HistoryCause, HistoryEntity, HistoryEntry } from '../common/history';
import { BeforeCommitBatch, deferWrites } from '../database/transaction';

/** A connection or a transaction: what a read outside a transaction's own work runs on. */
type Queryable = Pick<EntityManager, 'query'>;

/** One item of an order's history, as the API shows it. */
export interface HistoryItem {
  at: string;
  entity: HistoryEntity;
  entityId: string;
  from: string | null;
  to: string;
  cause: HistoryCause;
}

/**
 * The store of the table `order_history`: the moves of an order, its payments and its fulfillment,
 * appended in the transaction that makes them (so the history holds a move if and only if it
 * committed), in one statement at its end with the transaction's other writes.
 */
@Injectable()
export class OrderHistoryStore {
  private readonly entries = new BeforeCommitBatch<HistoryEntry>((em, entries) => this.insert(em, entries));

  /** Appends moves, written at the end of the caller's transaction, in the order given. */
  append(em: EntityManager, entries: readonly HistoryEntry[]): void {
    for (const entry of entries) this.entries.add(em, entry);
  }

  private async insert(em: EntityManager, entries: HistoryEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await deferWrites(em, [
      {
        key: 'order_history',
        // WITH ORDINALITY: the sequence follows the order the moves were made in.
        sql: `INSERT INTO order_history (order_id, entity, entity_id, from_status, to_status, at, cause)
              SELECT r.order_id, r.entity, r.entity_id, r.from_status, r.to_status, r.at, r.cause
                FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (order_id uuid, entity text, entity_id uuid, from_status text,
                     to_status text, at timestamptz, cause jsonb))
                     WITH ORDINALITY AS r(order_id, entity, entity_id, from_status, to_status, at, cause, n)
               ORDER BY r.n`,
        params: [
          JSON.stringify(
            entries.map((e) => ({ order_id: e.orderId, entity: e.entity, entity_id: e.entityId, from_status: e.from, to_status: e.to, at: e.at, cause: e.cause })),
          ),
        ],
      },
    ]);
  }

  /** An order's history, oldest first (by time, then by the order the moves were written in). */
  async list(db: Queryable, orderId: string): Promise<HistoryItem[]> {
    const rows: Array<Record<string, any>> = await db.query(
      `SELECT entity, entity_id, from_status, to_status, at, cause FROM order_history WHERE order_id = $1 ORDER BY at, seq`,
      [orderId],
    );
    return rows.map((r) => ({
      at: (r.at as Date).toISOString(),
      entity: r.entity,
      entityId: r.entity_id,
      from: r.from_status,
      to: r.to_status,
      cause: r.cause,
    }));
  }
}
