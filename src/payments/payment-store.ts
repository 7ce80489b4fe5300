import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { DomainError } from '../common/domain-error';
import { keysetQuery, Page, PageQuery, toPage } from '../common/pagination';
import type { OrderSnapshot, PaymentSnapshot } from '../common/order-views';
import { idsOfRows } from '../database/bulk-sql';
import { BeforeCommitBatch, DeferredWrite, deferWrites, TransactionState } from '../database/transaction';
import { Order } from './order.entity';
import type { OrderStatus } from './order.state';
import { Payment } from './payment.entity';
import { CAPTURED_STATUSES } from './payment.state';

/** The rows a use case changed, to write at the end of its transaction. */
export interface ChangedRows {
  order?: Order | null;
  payment?: Payment | null;
  /** The payment is new: inserted, not updated. */
  newPayment?: boolean;
}

/** A connection or a transaction: what a read outside the unit of work runs on. */
export type Queryable = Pick<EntityManager, 'query'>;

export type PaymentKey = { provider: string; merchantAccountId: string; providerPaymentId: string };
const paymentKey = (k: PaymentKey) => `${k.provider}\u0000${k.merchantAccountId}\u0000${k.providerPaymentId}`;

/** The filters of the orders list. */
export interface OrderFilter extends PageQuery {
  status?: OrderStatus;
  merchantAccountId?: string;
}

/** The filters of the payments list. */
export interface PaymentFilter extends PageQuery {
  provider?: string;
  providerPaymentId?: string;
  orderId?: string;
}

/** One row to write at the end of a transaction. */
type Write = { insert: Payment } | { update: Payment } | { order: Order };

/** What one transaction has read and locked (its identity maps), and what it registered. */
interface TransactionWork {
  /** The orders it has locked, by id. */
  orders: Map<string, Order>;
  /** The payments it has looked for (and locked), by provider key; null: looked for, not there. */
  payments: Map<string, Payment | null>;
  /** Payments registered in it and not written yet: inserted at its end, not updated. */
  unwritten: Set<Payment>;
  /** By order id: the account of each payment the order holds, read once its row is locked. */
  accountsByOrder: Map<string, string[]>;
}

/**
 * The store of the tables `orders` and `payments`: every statement on them, the mapping of their
 * rows, and what one transaction has read and locked of them. What a use case changed is announced
 * by `OrderChangesService` (order-changes.service.ts), which hands the rows here to be written.
 *
 * Within one transaction each order and payment is read (and locked) once, and written once, at
 * the end, in one statement for all of them: a batch of deliveries writes all its payments and
 * orders in three statements, however many. In-transaction subscribers see the change in the event
 * they are given; the tables show it at the commit.
 */
@Injectable()
export class PaymentStore {
  private readonly work = new TransactionState<TransactionWork>(() => ({
    orders: new Map(),
    payments: new Map(),
    unwritten: new Set(),
    accountsByOrder: new Map(),
  }));

  /** The transaction's writes, in one flush: payments inserted, payments updated, orders updated. */
  private readonly writes = new BeforeCommitBatch<Write>((em, writes) => this.write(em, writes));

  /**
   * The order, locked, as this transaction knows it: locked once per transaction (a second call,
   * from a reaction to this transaction's own events, gets the same object without a round trip).
   */
  async lockOrder(em: EntityManager, id: string): Promise<Order | null> {
    await this.lockOrders(em, [id]);
    return this.lockedOrder(em, id);
  }

  /** The order if this transaction has locked it already (no round trip), else null. */
  lockedOrder(em: EntityManager, id: string): Order | null {
    return this.work.of(em).orders.get(id) ?? null;
  }

  /** Locks the orders this transaction has not locked yet, in one statement, in id order. */
  async lockOrders(em: EntityManager, ids: readonly string[]): Promise<void> {
    const { orders } = this.work.of(em);
    const missing = [...new Set(ids)].filter((id) => !orders.has(id)).sort();
    if (missing.length === 0) return;
    const rows = await em.query(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, [missing]);
    for (const row of rows) orders.set(row.id, orderFromRow(row));
  }

  /**
   * The ids of the orders of these references (a provider that echoes the merchant's reference, not
   * our id), not locked: a reference never changes, so the caller locks them by id, with the others.
   */
  async orderIdsByReference(em: EntityManager, references: readonly string[]): Promise<Map<string, string>> {
    const wanted = [...new Set(references)];
    if (wanted.length === 0) return new Map();
    const rows: Array<{ id: string; reference: string }> = await em.query(`SELECT id, reference FROM orders WHERE reference = ANY($1::text[])`, [wanted]);
    return new Map(rows.map((r) => [r.reference, r.id]));
  }

  /**
   * The account of each payment an order holds (one entry per payment), for an order this
   * transaction has locked: read once, after the lock (so a payment another transaction attached
   * before it let go of the order is seen), then kept in step with the payments this transaction
   * adds.
   */
  async attachedAccounts(em: EntityManager, orderId: string): Promise<readonly string[]> {
    await this.readAttachedAccounts(em, [orderId]);
    return this.work.of(em).accountsByOrder.get(orderId)!;
  }

  /**
   * Reads, in one statement, the accounts of the payments of these orders (which this transaction
   * has locked) where it has not read them yet: a batch of deliveries creating payments reads them
   * for all its orders at once, after their locks, rather than once per order.
   */
  async readAttachedAccounts(em: EntityManager, orderIds: readonly string[]): Promise<void> {
    const work = this.work.of(em);
    const missing = [...new Set(orderIds)].filter((id) => !work.accountsByOrder.has(id));
    if (missing.length === 0) return;
    const rows: Array<{ order_id: string; merchant_account_id: string }> = await em.query(
      // One probe of the order's index per order, whatever the table's size (see database/bulk-sql.ts).
      `SELECT x.* FROM unnest($1::uuid[]) AS k(id)
         CROSS JOIN LATERAL (SELECT order_id, merchant_account_id FROM payments p WHERE p.order_id = k.id OFFSET 0) x`,
      [missing],
    );
    for (const id of missing) work.accountsByOrder.set(id, []);
    for (const r of rows) work.accountsByOrder.get(r.order_id)!.push(r.merchant_account_id);
    // Payments registered in this transaction and not written yet: only the orders read here (the
    // others' lists already hold theirs).
    for (const p of work.unwritten) if (missing.includes(p.orderId)) work.accountsByOrder.get(p.orderId)!.push(p.merchantAccountId);
  }

  /** The payment of a provider key, locked (the processing transaction's first look). */
  async lockPayment(em: EntityManager, key: PaymentKey): Promise<Payment | null> {
    await this.lockPayments(em, [key]);
    return this.work.of(em).payments.get(paymentKey(key)) ?? null;
  }

  /** Locks the payments of these keys this transaction has not looked for yet, in one statement, in key order. */
  async lockPayments(em: EntityManager, keys: readonly PaymentKey[]): Promise<void> {
    const { payments } = this.work.of(em);
    const missing = new Map<string, PaymentKey>();
    for (const key of keys) if (!payments.has(paymentKey(key))) missing.set(paymentKey(key), key);
    if (missing.size === 0) return;
    const sorted = [...missing.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
    const rows = await em.query(
      // One probe of the key's index per key, in the keys' order (the order every transaction locks
      // payments in), whatever the table's size (see database/bulk-sql.ts).
      `SELECT x.* FROM jsonb_to_recordset($1::jsonb) AS k(provider text, account text, payment text)
         CROSS JOIN LATERAL (
           SELECT ${PAYMENT_COLUMNS} FROM payments p
            WHERE p.provider = k.provider AND p.merchant_account_id = k.account AND p.provider_payment_id = k.payment
              FOR UPDATE OF p) x`,
      [JSON.stringify(sorted.map((k) => ({ provider: k.provider, account: k.merchantAccountId, payment: k.providerPaymentId })))],
    );
    for (const k of missing.keys()) payments.set(k, null);
    for (const row of rows) {
      const payment = paymentFromRow(row);
      payments.set(paymentKey(payment), payment);
    }
  }

  /** Inserts a placed order; false when its reference is taken. */
  async insertOrder(em: EntityManager, o: Order): Promise<boolean> {
    const inserted: unknown[] = await em.query(
      `INSERT INTO orders (id, reference, status, amount_minor, currency, carrier, merchant_account_id, ship_to, items, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (reference) DO NOTHING
       RETURNING id`,
      [o.id, o.reference, o.status, o.amountMinor.toString(), o.currency, o.carrier, o.merchantAccountId, JSON.stringify(o.shipTo),
        JSON.stringify(o.items), o.createdAt, o.updatedAt],
    );
    return inserted.length > 0;
  }

  /**
   * Takes the rows a use case changed into this transaction's identity maps now, and writes them at
   * its end, with everything else it changes, in one flush. A new payment whose key this
   * transaction already holds a payment for is `PaymentExists`.
   */
  writeAtCommit(em: EntityManager, { order, payment, newPayment }: ChangedRows): void {
    const work = this.work.of(em);
    if (payment && newPayment) {
      const key = paymentKey(payment);
      if (work.payments.get(key)) throw new PaymentExists();
      work.payments.set(key, payment);
      work.unwritten.add(payment);
      work.accountsByOrder.get(payment.orderId)?.push(payment.merchantAccountId);
      this.writes.add(em, { insert: payment });
    } else if (payment && !work.unwritten.has(payment)) {
      this.writes.add(em, { update: payment });
    }
    if (order) {
      work.orders.set(order.id, order);
      this.writes.add(em, { order });
    }
  }

  /**
   * The transaction's writes, at its end, each row once: new payments, changed payments, changed
   * orders; deferred to run with the transaction's other writes (`deferWrites`), in one statement.
   */
  private async write(em: EntityManager, writes: Write[]): Promise<void> {
    const inserts = new Set<Payment>();
    const payments = new Set<Payment>();
    const orders = new Set<Order>();
    for (const w of writes) {
      if ('insert' in w) inserts.add(w.insert);
      else if ('update' in w) payments.add(w.update);
      else orders.add(w.order);
    }
    const { unwritten } = this.work.of(em);
    for (const p of inserts) unwritten.delete(p);
    // A payment is inserted or updated, never both in one flush: one statement for the three.
    const deferred: DeferredWrite[] = [];
    if (inserts.size > 0) {
      deferred.push({
        key: 'payments',
        sql: `INSERT INTO payments (${PAYMENT_COLUMNS})
              SELECT r.id, r.order_id, r.provider, r.provider_payment_id, r.merchant_account_id, r.status, r.amount_minor::bigint,
                     r.currency, r.refunded_minor::bigint, r.refunds, r.dispute_outcome, r.created_at, r.updated_at
                FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, order_id uuid, provider text, provider_payment_id text,
                     merchant_account_id text, status text, amount_minor text, currency text, refunded_minor text,
                     refunds jsonb, dispute_outcome text, created_at timestamptz, updated_at timestamptz)
              ON CONFLICT (provider, merchant_account_id, provider_payment_id) DO NOTHING
              RETURNING id`,
        params: [JSON.stringify([...inserts].map(paymentRow))],
        then: (inserted) => {
          // Registered meanwhile: the caller decides (the API answers the existing one; a delivery retries).
          if (inserted.length < inserts.size) throw new PaymentExists();
        },
      });
    }
    if (payments.size > 0) {
      deferred.push({
        key: 'payments',
        sql: `UPDATE payments p SET status = r.status, refunded_minor = r.refunded_minor::bigint, refunds = r.refunds, dispute_outcome = r.dispute_outcome,
                     updated_at = r.updated_at
                FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, status text, refunded_minor text, refunds jsonb, dispute_outcome text, updated_at timestamptz)
               WHERE p.id = r.id AND p.id = ${idsOfRows('$1::jsonb')}`,
        params: [JSON.stringify([...payments].map(paymentRow))],
      });
    }
    if (orders.size > 0) {
      deferred.push({
        key: 'orders',
        sql: `UPDATE orders o SET status = r.status, paid_via = r.paid_via, paid_at = r.paid_at, fulfillment = r.fulfillment, updated_at = r.updated_at
                FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, status text, paid_via jsonb, paid_at timestamptz, fulfillment jsonb, updated_at timestamptz)
               WHERE o.id = r.id AND o.id = ${idsOfRows('$1::jsonb')}`,
        params: [JSON.stringify([...orders].map((o) => ({ id: o.id, status: o.status, paid_via: o.paidVia, paid_at: o.paidAt, fulfillment: o.fulfillment, updated_at: o.updatedAt })))],
      });
    }
    await deferWrites(em, deferred);
  }

  /** The order as this transaction knows it (the locked one, with its unwritten changes), or as its row says. */
  async snapshotOf(em: EntityManager, orderId: string): Promise<OrderSnapshot | null> {
    const known = this.work.of(em).orders.get(orderId) ?? (await this.findOrder(em, orderId));
    return known ? orderSnapshot(known) : null;
  }

  // Reads outside the unit of work: nothing locked, nothing kept.

  async findOrder(db: Queryable, id: string): Promise<Order | null> {
    const [row] = await db.query(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [id]);
    return row ? orderFromRow(row) : null;
  }

  /** A page of orders, newest first, in one statement. */
  async listOrders(db: Queryable, filter: OrderFilter): Promise<Page<Order>> {
    const { text, params, limit } = keysetQuery(
      `SELECT ${ORDER_COLUMNS} FROM orders`,
      [
        ['status = ?', filter.status],
        ['merchant_account_id = ?', filter.merchantAccountId],
      ],
      filter,
    );
    const rows: Array<Record<string, unknown>> = await db.query(text, params);
    return toPage(rows.map(orderFromRow), limit, (o) => o);
  }

  async findPayment(db: Queryable, id: string): Promise<Payment | null> {
    const [row] = await db.query(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1`, [id]);
    return row ? paymentFromRow(row) : null;
  }

  /** The payment of a provider key, not locked. */
  async findPaymentByKey(db: Queryable, key: PaymentKey): Promise<Payment | null> {
    const [row] = await db.query(
      `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE provider = $1 AND merchant_account_id = $2 AND provider_payment_id = $3`,
      [key.provider, key.merchantAccountId, key.providerPaymentId],
    );
    return row ? paymentFromRow(row) : null;
  }

  /** Which of `providerPaymentIds` are payments of `provider` registered under one of `accounts` (index probes). */
  async registeredAmong(db: Queryable, { provider, accounts, providerPaymentIds }: { provider: string; accounts: readonly string[]; providerPaymentIds: readonly string[] }): Promise<string[]> {
    if (accounts.length === 0 || providerPaymentIds.length === 0) return [];
    const rows: Array<{ provider_payment_id: string }> = await db.query(
      `SELECT DISTINCT provider_payment_id FROM payments
        WHERE provider = $1 AND merchant_account_id = ANY($2::text[]) AND provider_payment_id = ANY($3::text[])`,
      [provider, accounts, providerPaymentIds],
    );
    return rows.map((r) => r.provider_payment_id);
  }

  /** The payments of these orders, in one statement, oldest first. */
  async paymentsOfOrders(db: Queryable, orderIds: readonly string[]): Promise<Payment[]> {
    const rows: Array<Record<string, unknown>> = await db.query(
      `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE order_id = ANY($1::uuid[]) ORDER BY id`,
      [orderIds],
    );
    return rows.map(paymentFromRow);
  }

  /** A page of payments, newest first, in one statement. */
  async listPayments(db: Queryable, filter: PaymentFilter): Promise<Page<Payment>> {
    const { text, params, limit } = keysetQuery(
      `SELECT ${PAYMENT_COLUMNS} FROM payments`,
      [
        ['provider = ?', filter.provider],
        ['provider_payment_id = ?', filter.providerPaymentId],
        ['order_id = ?', filter.orderId],
      ],
      filter,
    );
    const rows: Array<Record<string, unknown>> = await db.query(text, params);
    return toPage(rows.map(paymentFromRow), limit, (p) => p);
  }

  // The operator's reports (reconciliation): static, so the admin route and the command line, which
  // has no Nest application, run the same statement on any connection.

  /** Of these provider payment ids of one provider and account, those captured here. */
  static async capturedPaymentIds(db: Queryable, provider: string, merchantAccountId: string, providerPaymentIds: readonly string[]): Promise<string[]> {
    if (providerPaymentIds.length === 0) return [];
    const rows: Array<{ provider_payment_id: string }> = await db.query(
      `SELECT provider_payment_id FROM payments
        WHERE provider = $1 AND merchant_account_id = $2 AND provider_payment_id = ANY($3) AND status = ANY($4)`,
      [provider, merchantAccountId, providerPaymentIds, [...CAPTURED_STATUSES]],
    );
    return rows.map((r) => r.provider_payment_id);
  }

  /**
   * Orders paid more than `minutes` ago whose fulfillment has not been dispatched, oldest payment
   * first. The order's copy of its fulfillment answers: it changes in the transaction that changes
   * the fulfillment.
   */
  static async paidNotDispatched(db: Queryable, minutes: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await db.query(
      `SELECT id FROM orders
        WHERE status = 'paid' AND paid_at < now() - make_interval(mins => $1)
          AND (fulfillment->>'status') IS DISTINCT FROM 'dispatched'
        ORDER BY paid_at`,
      [minutes],
    );
    return rows.map((r) => r.id);
  }
}

/** A payment as a row of the bulk statements (bigints as text, dates as ISO instants). */
function paymentRow(p: Payment): Record<string, unknown> {
  return {
    id: p.id,
    order_id: p.orderId,
    provider: p.provider,
    provider_payment_id: p.providerPaymentId,
    merchant_account_id: p.merchantAccountId,
    status: p.status,
    amount_minor: p.amountMinor.toString(),
    currency: p.currency,
    refunded_minor: p.refundedMinor.toString(),
    // The refunds counted one by one: `{"<refund id>": "<minor>"}` (docs/design.md#refunds).
    refunds: Object.fromEntries([...p.refunds].map(([id, minor]) => [id, minor.toString()])),
    dispute_outcome: p.disputeOutcome,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  };
}

const ORDER_COLUMNS = 'id, reference, status, amount_minor, currency, carrier, merchant_account_id, ship_to, items, paid_via, paid_at, fulfillment, created_at, updated_at';
const PAYMENT_COLUMNS =
  'id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor, currency, refunded_minor, refunds, dispute_outcome, created_at, updated_at';

/** An order from its row (ORDER_COLUMNS). */
export function orderFromRow(r: Record<string, any>): Order {
  return Object.assign(new Order(), {
    id: r.id,
    reference: r.reference,
    status: r.status,
    amountMinor: BigInt(r.amount_minor),
    currency: r.currency,
    carrier: r.carrier,
    merchantAccountId: r.merchant_account_id,
    shipTo: r.ship_to,
    items: r.items,
    paidVia: r.paid_via,
    paidAt: r.paid_at,
    fulfillment: r.fulfillment,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
}

/** A payment from its row (PAYMENT_COLUMNS). */
export function paymentFromRow(r: Record<string, any>): Payment {
  return Object.assign(new Payment(), {
    id: r.id,
    orderId: r.order_id,
    provider: r.provider,
    providerPaymentId: r.provider_payment_id,
    merchantAccountId: r.merchant_account_id,
    status: r.status,
    amountMinor: BigInt(r.amount_minor),
    currency: r.currency,
    refundedMinor: BigInt(r.refunded_minor),
    refunds: new Map(Object.entries((r.refunds ?? {}) as Record<string, string>).map(([id, minor]) => [id, BigInt(minor)])),
    disputeOutcome: r.dispute_outcome,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
}

/** The payment's key already holds a payment (the unique constraint decided). */
export class PaymentExists extends DomainError {
  constructor() {
    super('PAYMENT.CREATED_CONCURRENTLY', 'the payment was registered meanwhile');
  }
}

export function paymentView(p: Payment): PaymentSnapshot {
  return {
    id: p.id,
    orderId: p.orderId,
    provider: p.provider,
    providerPaymentId: p.providerPaymentId,
    merchantAccountId: p.merchantAccountId,
    status: p.status,
    amount: p.amount.toDecimal(),
    currency: p.currency,
    refundedAmount: p.refundedAmount.toDecimal(),
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

/** An Order as the API shows it, without its payments (the body of its events). */
export function orderSnapshot(o: Order): OrderSnapshot {
  return {
    id: o.id,
    reference: o.reference,
    status: o.status,
    amount: o.amount.toDecimal(),
    currency: o.currency,
    carrier: o.carrier,
    merchantAccountId: o.merchantAccountId ?? null,
    shipTo: o.shipTo,
    items: o.items,
    fulfillment: o.fulfillment ?? null,
    createdAt: o.createdAt.toISOString(),
    updatedAt: o.updatedAt.toISOString(),
  };
}

/** What a poll reads of a payment: who it is at the provider, and what it is worth. */
export interface PollCandidate {
  paymentId: string;
  providerPaymentId: string;
  merchantAccountId: string;
  amountMinor: bigint;
  currency: string;
  /** An operator (or a provider's alert) asked for this poll. */
  requested: boolean;
  /** Its polls since its last change, before this one. */
  polls: number;
}

/** Which payments an endpoint polls: its provider, the accounts it serves (`'*'`: any), and when. */
export interface PollScope {
  provider: string;
  accounts: readonly string[] | '*';
  /** With `accounts` `'*'`: the accounts an earlier endpoint polls. */
  excluded: readonly string[];
  /** `pollAfterSeconds`; null for an endpoint that polls only what an operator asks for. */
  afterSeconds: number | null;
}

export type PollResult = 'changed' | 'unchanged' | 'error';

/** The statuses polling looks at: a payment still waiting for news. */
export const OPEN_STATUSES = ['pending', 'processing', 'authorized'] as const;
/** The longest wait between two polls of one payment. */
export const MAX_WAIT_SECONDS = 3_600;
/** A payment unchanged for longer is no longer polled (an operator may still ask). */
export const MAX_AGE_SECONDS = 7 * 86_400;

/**
 * The polling schedule of each payment (table `payment_polls`, beside the payments it schedules), docs/operations.md#when-webhooks-stop):
 * the one store that writes it. A payment still open `afterSeconds` after its last change is due;
 * the polls come at that age, then after waits of `afterSeconds`, twice that, four times that… at most an hour, for 7 days after the
 * change; a payment that changes starts a new schedule (`since` no longer its `updated_at`). An
 * operator's request makes a payment due at once, whatever its status or age.
 *
 * Claiming is one statement: the schedule rows of the due payments are written (upserted) with their
 * next time, guarded so that a row another process claimed since is not claimed again. Two pollers
 * never ask about one payment for one turn of its schedule, whichever process they run in.
 */
@Injectable()
export class PaymentPollStore {
  constructor(@InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource) {}

  /** Claims at most `limit` due payments of the scope at `nowMs`, the longest waiting first. */
  async claimDue(scope: PollScope, nowMs: number, limit: number): Promise<PollCandidate[]> {
    const rows: Array<{ id: string; provider_payment_id: string; merchant_account_id: string; amount_minor: string; currency: string; requested: boolean; polls: number }> =
      await this.dataSource.query(
        // Two parts, each on its index: what operators asked for (payment_polls_requested), and the
        // open payments past their age (payments_open), whose schedule row is missing, stale or due.
        `WITH due AS (
           (SELECT p.id, p.updated_at, p.provider_payment_id, p.merchant_account_id, p.amount_minor, p.currency,
                   CASE WHEN pp.since = p.updated_at THEN pp.polls ELSE 0 END AS polls, pp.requested_at AS due_at, true AS requested
              FROM payment_polls pp
              JOIN payments p ON p.id = pp.payment_id
             WHERE pp.requested_at <= $3::timestamptz
               AND p.provider = $1 AND ($2::text[] IS NULL OR p.merchant_account_id = ANY($2::text[]))
               AND NOT (p.merchant_account_id = ANY($8::text[])))
           UNION ALL
           (SELECT p.id, p.updated_at, p.provider_payment_id, p.merchant_account_id, p.amount_minor, p.currency,
                   CASE WHEN pp.since = p.updated_at THEN pp.polls ELSE 0 END AS polls,
                   CASE WHEN pp.since = p.updated_at THEN pp.next_at ELSE p.updated_at + make_interval(secs => $4::int) END AS due_at,
                   false AS requested
              FROM payments p
              LEFT JOIN payment_polls pp ON pp.payment_id = p.id
             WHERE $4::int IS NOT NULL
               AND p.provider = $1 AND ($2::text[] IS NULL OR p.merchant_account_id = ANY($2::text[]))
               AND NOT (p.merchant_account_id = ANY($8::text[]))
               AND p.status IN ('pending', 'processing', 'authorized')
               AND p.updated_at <= $3::timestamptz - make_interval(secs => $4::int)
               AND p.updated_at > $3::timestamptz - make_interval(secs => $6::int)
               AND (pp.payment_id IS NULL OR (pp.requested_at IS NULL AND (pp.since <> p.updated_at OR pp.next_at <= $3::timestamptz))))
           ORDER BY due_at
           LIMIT $5
         ),
         claimed AS (
           INSERT INTO payment_polls AS pp (payment_id, since, polls, next_at, requested_at, last_polled_at)
           -- The exponent stops at 20 (past the hour's cap for any age): polls keeps counting an
           -- operator's requests, and power(2, 1024) overflows.
           SELECT id, updated_at, polls + 1,
                  $3::timestamptz + make_interval(secs => LEAST(COALESCE($4::int, $7::int) * power(2, LEAST(polls, 20)), $7::int)),
                  NULL, $3::timestamptz
             FROM due
           ON CONFLICT (payment_id) DO UPDATE
              SET since = EXCLUDED.since, polls = EXCLUDED.polls, next_at = EXCLUDED.next_at,
                  requested_at = NULL, last_polled_at = EXCLUDED.last_polled_at, last_result = NULL
            WHERE pp.requested_at <= $3::timestamptz OR pp.since <> EXCLUDED.since OR pp.next_at <= $3::timestamptz
           RETURNING payment_id
         )
         SELECT d.id, d.provider_payment_id, d.merchant_account_id, d.amount_minor::text AS amount_minor, d.currency, d.requested, d.polls
           FROM due d JOIN claimed c ON c.payment_id = d.id
          ORDER BY d.due_at`,
        [
          scope.provider,
          scope.accounts === '*' ? null : scope.accounts,
          new Date(nowMs).toISOString(),
          scope.afterSeconds,
          limit,
          MAX_AGE_SECONDS,
          MAX_WAIT_SECONDS,
          scope.excluded,
        ],
      );
    return rows.map((r) => ({
      paymentId: r.id,
      providerPaymentId: r.provider_payment_id,
      merchantAccountId: r.merchant_account_id,
      amountMinor: BigInt(r.amount_minor),
      currency: r.currency,
      requested: r.requested,
      polls: Number(r.polls),
    }));
  }

  /**
   * What a poll found; when the provider asked to wait (`429`), no next poll before `notBeforeMs`;
   * `askAgainAtMs`: an operator's poll the provider did not answer is asked for again then.
   */
  async recordResult(paymentId: string, result: PollResult, notBeforeMs: number | null, askAgainAtMs: number | null = null): Promise<void> {
    await this.dataSource.query(
      `UPDATE payment_polls
          SET last_result = $2, next_at = GREATEST(next_at, COALESCE($3::timestamptz, next_at)),
              requested_at = COALESCE(requested_at, $4::timestamptz)
        WHERE payment_id = $1`,
      [paymentId, result, notBeforeMs === null ? null : new Date(notBeforeMs).toISOString(), askAgainAtMs === null ? null : new Date(askAgainAtMs).toISOString()],
    );
  }

  /** An operator asks for a poll of the payment now; false when there is no such payment. */
  async request(paymentId: string, nowMs: number): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO payment_polls (payment_id, since, polls, next_at, requested_at)
       SELECT id, updated_at, 0, $2::timestamptz, $2::timestamptz FROM payments WHERE id = $1
       ON CONFLICT (payment_id) DO UPDATE SET requested_at = EXCLUDED.requested_at
       RETURNING payment_id`,
      [paymentId, new Date(nowMs).toISOString()],
    );
    return rows.length > 0;
  }

  /**
   * Every open payment of the scope is due at once (Stripe told of an `event_generation_failure`:
   * its webhooks for that time may never come). Returns how many.
   */
  async requestOpen(scope: Pick<PollScope, 'provider' | 'accounts' | 'excluded'>, nowMs: number, db: Queryable = this.dataSource): Promise<number> {
    const rows: unknown[] = await db.query(
      `INSERT INTO payment_polls (payment_id, since, polls, next_at, requested_at)
       SELECT id, updated_at, 0, $3::timestamptz, $3::timestamptz FROM payments
        WHERE provider = $1 AND ($2::text[] IS NULL OR merchant_account_id = ANY($2::text[]))
          AND NOT (merchant_account_id = ANY($4::text[]))
          AND status IN ('pending', 'processing', 'authorized')
       ON CONFLICT (payment_id) DO UPDATE SET requested_at = EXCLUDED.requested_at
       RETURNING payment_id`,
      [scope.provider, scope.accounts === '*' ? null : scope.accounts, new Date(nowMs).toISOString(), scope.excluded],
    );
    return rows.length;
  }

  /**
   * Forgets the schedules no poll needs any more (retention, docs/operations.md#retention): of
   * payments settled, or unchanged for longer than polls go on, and not asked for. In batches;
   * returns how many.
   */
  async purgeFinished(batchSize: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const rows: unknown[] = await this.dataSource.query(
        `DELETE FROM payment_polls WHERE payment_id IN (
           SELECT pp.payment_id FROM payment_polls pp JOIN payments p ON p.id = pp.payment_id
            WHERE pp.requested_at IS NULL
              AND (p.status NOT IN ('pending', 'processing', 'authorized') OR p.updated_at < now() - make_interval(secs => $2::int))
            LIMIT $1)
         RETURNING payment_id`,
        [batchSize, MAX_AGE_SECONDS],
      );
      deleted += rows.length;
      if (rows.length < batchSize) return deleted;
    }
  }

  /** The payment's provider and account, or null when there is no such payment. */
  async paymentOf(paymentId: string): Promise<{ provider: string; merchantAccountId: string } | null> {
    const rows: Array<{ provider: string; merchant_account_id: string }> = await this.dataSource.query(
      `SELECT provider, merchant_account_id FROM payments WHERE id = $1`,
      [paymentId],
    );
    return rows.length === 0 ? null : { provider: rows[0].provider, merchantAccountId: rows[0].merchant_account_id };
  }
}
