import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { RefundSnapshot } from '../common/order-views';
import { IllegalMove, canMove } from '../common/lifecycle';
import { keysetQuery, Page, PageQuery, toPage } from '../common/pagination';
import type { Queryable } from './payment-store';
import { Refund } from './refund.entity';
import { OUTSTANDING_REFUND_STATUSES, REFUND_LIFECYCLE, RefundStatus } from './refund.state';

const REFUND_COLUMNS =
  'id, order_id, payment_id, provider, merchant_account_id, amount_minor, currency, reason, status, provider_refund_id, failure_reason, created_at, updated_at';

/**
 * The store of the table `refunds`: where Refund aggregates are inserted, locked, saved and read.
 * A save is guarded by the status the refund was read in (a second writer that read it before finds
 * it moved and writes nothing), and checked against REFUND_LIFECYCLE before any statement.
 */
@Injectable()
export class RefundStore {
  /** Inserts a requested refund in the caller's transaction. */
  async insert(em: EntityManager, r: Refund): Promise<void> {
    await em.query(
      `INSERT INTO refunds (${REFUND_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [r.id, r.orderId, r.paymentId, r.provider, r.merchantAccountId, r.amountMinor.toString(), r.currency, r.reason, r.status,
        r.providerRefundId, r.failureReason, r.createdAt, r.updatedAt],
    );
  }

  /**
   * Writes a refund's move, if the row is still in `from` (whoever moved it first wins); true when
   * written. The provider's refund id, once set, is never replaced.
   */
  async saveMove(em: EntityManager, r: Refund, from: RefundStatus): Promise<boolean> {
    if (!canMove(REFUND_LIFECYCLE, from, r.status)) throw new IllegalMove(REFUND_LIFECYCLE, from, r.status);
    const rows: unknown[] = await em.query(
      `UPDATE refunds SET status = $3, provider_refund_id = COALESCE(provider_refund_id, $4), failure_reason = $5, updated_at = $6
        WHERE id = $1 AND status = $2
      RETURNING id`,
      [r.id, from, r.status, r.providerRefundId, r.failureReason, r.updatedAt],
    );
    return rows.length > 0;
  }

  /** A refund, locked in the caller's transaction. */
  async lock(em: EntityManager, id: string): Promise<Refund | null> {
    const [row] = await em.query(`SELECT ${REFUND_COLUMNS} FROM refunds WHERE id = $1 FOR UPDATE`, [id]);
    return row ? refundFromRow(row) : null;
  }

  /**
   * The refunds of a payment that the provider's refund ids name, locked (a webhook confirming or
   * failing them): only this payment's, so one account's event never moves another's refund.
   */
  async lockByProviderIds(em: EntityManager, paymentId: string, providerRefundIds: readonly string[]): Promise<Refund[]> {
    if (providerRefundIds.length === 0) return [];
    const rows: Array<Record<string, unknown>> = await em.query(
      `SELECT ${REFUND_COLUMNS} FROM refunds WHERE payment_id = $1 AND provider_refund_id = ANY($2::text[]) ORDER BY id FOR UPDATE`,
      [paymentId, [...new Set(providerRefundIds)]],
    );
    return rows.map(refundFromRow);
  }

  /**
   * Whether one of the payment's refunds is still `requested`: sent, or about to be, and the
   * provider's answer (its refund id) not recorded yet.
   */
  async hasRequested(em: EntityManager, paymentId: string): Promise<boolean> {
    // Locked: a worker recording the provider's answer holds the refund's row until it commits; this
    // waits for it, and then sees the refund `submitted` with its id (the row read again).
    const rows: unknown[] = await em.query(`SELECT id FROM refunds WHERE payment_id = $1 AND status = 'requested' ORDER BY id FOR UPDATE`, [paymentId]);
    return rows.length > 0;
  }

  /**
   * What a payment's refunds hold (the caller has locked the payment): the amount still on its way
   * (`requested`, `submitted`) and the amount the provider said it refunded (`succeeded`).
   */
  async amountsOfPayment(em: EntityManager, paymentId: string): Promise<{ outstandingMinor: bigint; succeededMinor: bigint }> {
    const [row] = await em.query(
      `SELECT COALESCE(SUM(amount_minor) FILTER (WHERE status = ANY($2::text[])), 0)::text AS outstanding,
              COALESCE(SUM(amount_minor) FILTER (WHERE status = 'succeeded'), 0)::text AS succeeded
         FROM refunds WHERE payment_id = $1`,
      [paymentId, OUTSTANDING_REFUND_STATUSES],
    );
    return { outstandingMinor: BigInt(row.outstanding), succeededMinor: BigInt(row.succeeded) };
  }

  async find(db: Queryable, id: string): Promise<Refund | null> {
    const [row] = await db.query(`SELECT ${REFUND_COLUMNS} FROM refunds WHERE id = $1`, [id]);
    return row ? refundFromRow(row) : null;
  }

  /** A page of an order's refunds, newest first. */
  async listOfOrder(db: Queryable, orderId: string, page: PageQuery): Promise<Page<Refund>> {
    const { text, params, limit } = keysetQuery(`SELECT ${REFUND_COLUMNS} FROM refunds`, [['order_id = ?', orderId]], page);
    const rows: Array<Record<string, unknown>> = await db.query(text, params);
    return toPage(rows.map(refundFromRow), limit, (r) => r);
  }
}

export function refundFromRow(r: Record<string, any>): Refund {
  return Object.assign(new Refund(), {
    id: r.id,
    orderId: r.order_id,
    paymentId: r.payment_id,
    provider: r.provider,
    merchantAccountId: r.merchant_account_id,
    amountMinor: BigInt(r.amount_minor),
    currency: r.currency,
    reason: r.reason,
    status: r.status,
    providerRefundId: r.provider_refund_id,
    failureReason: r.failure_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
}

export function refundView(r: Refund): RefundSnapshot {
  return {
    id: r.id,
    orderId: r.orderId,
    paymentId: r.paymentId,
    provider: r.provider,
    amount: r.amount.toDecimal(),
    currency: r.currency,
    reason: r.reason,
    status: r.status,
    providerRefundId: r.providerRefundId,
    failureReason: r.failureReason,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}
