import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError, ValidationFailed } from '../common/domain-error';
import type { Page } from '../common/pagination';
import type { ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { runTransaction } from '../database/transaction';
import { PW_CARRIER_NAMES, PW_OPTIONS } from '../config/tokens';
import type { CreateOrderDto, ListOrdersQuery, MarkPaidDto } from './dto/order.dto';
import type { ListPaymentsQuery, RegisterPaymentDto } from './dto/payment.dto';
import type { OrderHistoryView, OrderView, PaymentView } from './dto/views';
import { OrderHistoryStore } from './order-history.store';
import { MAX_PAYMENTS_PER_ORDER, Order } from './order.entity';
import { Payment } from './payment.entity';
import { IdempotencyKeyStore } from './idempotency-key.store';
import { type Answer, checkIdempotencyKey, parseRequestAmount, replayOrClaim } from './idempotent-requests';
import { OrderChangesService } from './order-changes.service';
import { orderSnapshot, PaymentExists, PaymentStore, paymentView } from './payment-store';

export type { Answer } from './idempotent-requests';

const IDEMPOTENCY_SCOPE = 'POST /orders';

/**
 * The host application's orders and payments (docs/rest-api.md#orders-and-payments). Each use case
 * is one transaction.
 */
@Injectable()
export class OrdersService {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @Inject(PW_CARRIER_NAMES) private readonly carriers: ReadonlySet<string>,
    private readonly store: PaymentStore,
    private readonly changes: OrderChangesService,
    private readonly idempotencyKeys: IdempotencyKeyStore,
    private readonly history: OrderHistoryStore,
  ) {}

  /**
   * Places an order. With an `Idempotency-Key`, the same key and an equal body (key order aside)
   * answer the first response again; another body answers 422. A second request with the same key
   * waits on the first one's row until it commits, so two at once cannot both create.
   */
  async create(dto: CreateOrderDto, rawBody: unknown, idempotencyKey?: string): Promise<Answer<OrderView>> {
    checkIdempotencyKey(idempotencyKey);
    const amount = parseRequestAmount(dto.amount, dto.currency);
    const carrier = dto.carrier ?? 'default';
    if (!this.carriers.has(carrier)) {
      throw new ValidationFailed([{ field: 'carrier', message: `carrier "${carrier}" is not configured` }]);
    }
    return runTransaction(this.dataSource, async (em) => {
      if (idempotencyKey !== undefined) {
        const replay = await replayOrClaim<OrderView>(this.idempotencyKeys, em, IDEMPOTENCY_SCOPE, idempotencyKey, rawBody);
        if (replay) return replay;
      }
      const order = Order.place({
        reference: dto.reference ?? null,
        amount,
        carrier,
        merchantAccountId: dto.merchantAccountId ?? null,
        shipTo: { ...dto.shipTo },
        items: dto.items.map((i) => ({ sku: i.sku, quantity: i.quantity })),
      });
      if (!(await this.changes.insertOrder(em, order, { kind: 'api', action: 'place' }))) throw new DomainError('ORDER.REFERENCE_TAKEN', 'an order with this reference exists');
      const answer = { status: 201, body: orderView(order, []) };
      if (idempotencyKey !== undefined) await this.idempotencyKeys.saveAnswer(em, IDEMPOTENCY_SCOPE, idempotencyKey, answer);
      return answer;
    });
  }

  async get(id: string): Promise<OrderView> {
    const order = await this.store.findOrder(this.dataSource, id);
    if (!order) throw new DomainError('ORDER.NOT_FOUND', 'no such order');
    return (await this.views([order]))[0];
  }

  /** Every move of the order, its payments and its fulfillment, oldest first. */
  async historyOf(id: string): Promise<OrderHistoryView> {
    const order = await this.store.findOrder(this.dataSource, id);
    if (!order) throw new DomainError('ORDER.NOT_FOUND', 'no such order');
    return { items: await this.history.list(this.dataSource, id) };
  }

  async list(query: ListOrdersQuery): Promise<Page<OrderView>> {
    const page = await this.store.listOrders(this.dataSource, query);
    return { items: await this.views(page.items), nextCursor: page.nextCursor };
  }

  /**
   * Registers a provider payment for an order, expecting the order's amount and currency. The same
   * (provider, account, payment) again for the same order answers the existing payment (200); for
   * another order, 409. The account must be the order's when the order names one (409
   * account_mismatch), and an order holds at most MAX_PAYMENTS_PER_ORDER payments (409
   * too_many_payments). Deliveries parked for that payment are released at once.
   */
  async registerPayment(orderId: string, dto: RegisterPaymentDto): Promise<Answer<PaymentView>> {
    // An account given is checked before anything is read: a typo answers 400 whatever the order.
    if (dto.merchantAccountId !== undefined) this.checkServed(dto.provider, dto.merchantAccountId);
    for (let attempt = 1; ; attempt++) {
      try {
        return await runTransaction(this.dataSource, async (em) => {
          const order = await this.lockOrder(em, orderId);
          const merchantAccountId = dto.merchantAccountId ?? this.defaultAccount(dto.provider, order.merchantAccountId);
          const key = { provider: dto.provider, merchantAccountId, providerPaymentId: dto.providerPaymentId };
          // Read, not locked: payments are locked before orders everywhere, and this holds the order.
          const existing = await this.store.findPaymentByKey(em, key);
          if (existing) {
            if (existing.orderId !== orderId) {
              throw new DomainError('PAYMENT.ALREADY_REGISTERED', 'this provider payment belongs to another order');
            }
            return { status: 200, body: paymentView(existing) };
          }
          // A registration vouches for its account, so it is what lets an order expect one.
          const refused = order.refusesPayment(merchantAccountId, await this.store.attachedAccounts(em, order.id), 'vouched');
          if (refused === 'account_mismatch') {
            throw new DomainError('ORDER.ACCOUNT_MISMATCH', 'the order accepts payments of another merchant account');
          }
          if (refused === 'too_many_payments') {
            throw new DomainError('ORDER.TOO_MANY_PAYMENTS', `an order holds at most ${MAX_PAYMENTS_PER_ORDER} payments`);
          }
          const payment = Payment.register({ orderId, ...key, expected: order.amount });
          // Announced in this transaction: the deliveries parked for this payment are released.
          await this.changes.save(em, { payment, newPayment: true, sourceEventId: null, cause: { kind: 'api', action: 'register-payment' } });
          return { status: 201, body: paymentView(payment) };
        });
      } catch (err) {
        // Registered by someone else between the look and the insert: look again (the unique
        // constraint decided; the second look finds it).
        if (!(err instanceof PaymentExists) || attempt === 3) throw err;
      }
    }
  }

  /**
   * The support path: the same `markPaid` a captured payment calls, so the order is fulfilled
   * once whichever comes first. An order already paid answers as it is.
   */
  async markPaid(id: string, dto: MarkPaidDto): Promise<OrderView> {
    await runTransaction(this.dataSource, async (em) => {
      const order = await this.lockOrder(em, id);
      const result = order.markPaid({ source: 'support', reason: dto.reason });
      if (result.outcome === 'rejected' || (result.outcome === 'already_applied' && order.status !== 'paid')) {
        throw new DomainError('ORDER.ILLEGAL_TRANSITION', 'refused', `a ${order.status} order cannot be marked paid`);
      }
      // `order.paid` is announced in this transaction: the fulfillment is requested from there.
      if (result.outcome === 'applied') await this.changes.save(em, { order, sourceEventId: null, cause: { kind: 'api', action: 'mark-paid' } });
    });
    return this.get(id);
  }

  async getPayment(id: string): Promise<PaymentView> {
    const payment = await this.store.findPayment(this.dataSource, id);
    if (!payment) throw new DomainError('PAYMENT.NOT_FOUND', 'no such payment');
    return paymentView(payment);
  }

  async listPayments(query: ListPaymentsQuery): Promise<Page<PaymentView>> {
    const page = await this.store.listPayments(this.dataSource, query);
    return { items: page.items.map(paymentView), nextCursor: page.nextCursor };
  }

  private async lockOrder(em: EntityManager, id: string): Promise<Order> {
    const order = await this.store.lockOrder(em, id);
    if (!order) throw new DomainError('ORDER.NOT_FOUND', 'no such order');
    return order;
  }

  /** The accounts the provider's endpoints name, and whether any of them serves many. */
  private accountsOf(provider: string): { endpoints: number; accounts: string[]; anyAccount: boolean; listed: boolean } {
    const endpoints = this.options.endpoints.filter((e) => e.provider === provider);
    const accounts = [
      ...new Set(endpoints.flatMap((e) => e.merchantAccountIds ?? (e.merchantAccountId === undefined ? [] : [e.merchantAccountId]))),
    ].filter((a) => a !== '*');
    return {
      endpoints: endpoints.length,
      accounts,
      anyAccount: endpoints.some((e) => e.merchantAccountIds?.includes('*')),
      listed: endpoints.some((e) => e.merchantAccountIds !== undefined),
    };
  }

  /** An account named for a registration must be one an endpoint of its provider serves. */
  private checkServed(provider: string, account: string): void {
    const { accounts, anyAccount } = this.accountsOf(provider);
    if (!anyAccount && !accounts.includes(account)) {
      throw new ValidationFailed([{ field: 'merchantAccountId', message: `no ${provider} endpoint has merchant account "${account}"` }]);
    }
  }

  /**
   * The account a registration that names none means: the single one the provider's endpoints
   * name; else, where they serve many, the order's own account when it names one they serve.
   */
  private defaultAccount(provider: string, orderAccount: string | null): string {
    const { endpoints, accounts, anyAccount, listed } = this.accountsOf(provider);
    if (accounts.length === 1 && !listed) return accounts[0];
    if (orderAccount !== null && (anyAccount || accounts.includes(orderAccount))) return orderAccount;
    throw new ValidationFailed([
      {
        field: 'merchantAccountId',
        message:
          endpoints === 0
            ? `no ${provider} endpoint is configured`
            : listed
              ? `required: a ${provider} endpoint serves many merchant accounts`
              : `required: the ${provider} endpoints name ${accounts.length} merchant accounts`,
      },
    ]);
  }

  /** Orders with their payments (and their copy of the fulfillment): one statement for the payments, whatever the page size. */
  private async views(orders: Order[]): Promise<OrderView[]> {
    if (orders.length === 0) return [];
    const payments = await this.store.paymentsOfOrders(this.dataSource, orders.map((o) => o.id));
    return orders.map((order) => orderView(order, payments.filter((p) => p.orderId === order.id)));
  }
}

export function orderView(o: Order, payments: Payment[]): OrderView {
  const { fulfillment, ...rest } = orderSnapshot(o);
  return { ...rest, payments: payments.map(paymentView), fulfillment };
}
