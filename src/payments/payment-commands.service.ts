import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import type { HistoryCause } from '../common/history';
import type { Page, PageQuery } from '../common/pagination';
import type { RefundSnapshot } from '../common/order-views';
import { PW_CONNECTION } from '../database/data-source';
import { runTransaction } from '../database/transaction';
import { OutboxHandlers } from '../outbox/outbox-handler';
import { OutboxWriter } from '../outbox/outbox-writer';
import { OutboxStore } from '../outbox/outbox.store';
import { TransactionEvents } from '../outbox/transaction-events';
import type { PaymentCommand } from '../providers/provider';
import { CommandEndpoints } from './command-endpoints';
import type { CaptureRequestDto, RefundRequestDto } from './dto/command.dto';
import { IdempotencyKeyStore } from './idempotency-key.store';
import { checkIdempotencyKey, parseRequestAmount, replayOrClaim } from './idempotent-requests';
import { Money } from './money';
import type { Order } from './order.entity';
import type { Payment } from './payment.entity';
import { OrderChangesService } from './order-changes.service';
import { PaymentStore } from './payment-store';
import { Refund } from './refund.entity';
import { RefundStore, refundView } from './refund.store';
import { RefundsService } from './refunds.service';

/** The outbox message types of the payment commands, and what each carries. */
export const PAYMENT_REFUND = 'payment.refund';
export const PAYMENT_CAPTURE = 'payment.capture';
export const PAYMENT_VOID = 'payment.void';
export const COMMAND_MESSAGE_TYPES = { refund: PAYMENT_REFUND, capture: PAYMENT_CAPTURE, void: PAYMENT_VOID } as const;

export interface PaymentCommandPayload {
  paymentId: string;
  orderId: string;
  /** `payment.refund`: the refund. */
  refundId?: string;
  /** `payment.capture`: the amount to capture, in minor units (as text). */
  amountMinor?: string;
}

/** The provider's idempotency key of a capture or a void: one per payment, for ever. */
export const captureKey = (paymentId: string) => `${paymentId}:capture`;
export const voidKey = (paymentId: string) => `${paymentId}:void`;

/** Statuses a refund may be asked of: the money was captured and not all of it went back. */
const REFUNDABLE: ReadonlySet<string> = new Set(['succeeded', 'partially_refunded']);

/**
 * The shop's payment commands (docs/commands.md): a refund, a capture, a void or a
 * cancel with a refund. Each is one transaction that writes the command's row (a Refund) and its
 * outbox message, which a worker then sends to the provider through its official client under a
 * stable idempotency key (PaymentCommandHandler). Nothing here moves money: the payment's amounts
 * change by the provider's word only.
 */
@Injectable()
export class PaymentCommandsService {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly store: PaymentStore,
    private readonly changes: OrderChangesService,
    private readonly refundStore: RefundStore,
    private readonly refunds: RefundsService,
    private readonly endpoints: CommandEndpoints,
    private readonly outbox: OutboxWriter,
    private readonly messages: OutboxStore,
    private readonly events: TransactionEvents,
    private readonly idempotencyKeys: IdempotencyKeyStore,
    handlers: OutboxHandlers,
  ) {
    for (const type of Object.values(COMMAND_MESSAGE_TYPES)) handlers.declareWritten(type, 'payment commands');
  }

  /**
   * Asks for a refund of the order's captured payment: `amount` (default: all that is still
   * refundable), sent once. With an `Idempotency-Key`, the same key and body answer the first
   * answer again.
   */
  async requestRefund(orderId: string, dto: RefundRequestDto, rawBody: unknown, idempotencyKey?: string): Promise<{ status: number; body: RefundSnapshot }> {
    checkIdempotencyKey(idempotencyKey);
    return runTransaction(this.dataSource, async (em) => {
      const scope = `POST /orders/${orderId}/refunds`;
      if (idempotencyKey !== undefined) {
        const first = await replayOrClaim<RefundSnapshot>(this.idempotencyKeys, em, scope, idempotencyKey, rawBody);
        if (first) return first;
      }
      const { order, payment } = await this.lockCaptured(em, orderId);
      const route = this.endpoints.route(payment.provider, payment.merchantAccountId, 'refund');
      if (!route.ok) throw new DomainError('COMMAND.NOT_SUPPORTED', 'not supported', route.detail);
      const refundable = await this.refunds.refundable(em, payment);
      const amount = dto.amount === undefined ? Money.fromMinor(refundable, payment.currency) : parseRequestAmount(dto.amount, payment.currency);
      if (amount.minor <= 0n || amount.minor > refundable) {
        throw new DomainError(
          'ORDER.ILLEGAL_TRANSITION',
          'refused',
          `${Money.fromMinor(refundable, payment.currency).toDecimal()} ${payment.currency} is refundable; ${amount.toDecimal()} was asked`,
        );
      }
      const refund = await this.writeRefund(em, order, payment, amount, dto.reason ?? null, { kind: 'api', action: 'refund' });
      const answer = { status: 202, body: refundView(refund) };
      if (idempotencyKey !== undefined) await this.idempotencyKeys.saveAnswer(em, scope, idempotencyKey, answer);
      return answer;
    });
  }

  /**
   * Captures the order's authorized payment (its whole amount, or `amount`), sent once per payment:
   * asked again while that capture is on its way, it answers the same.
   */
  async capture(orderId: string, dto: CaptureRequestDto): Promise<void> {
    await runTransaction(this.dataSource, async (em) => {
      const order = await this.mustFindOrder(em, orderId);
      // A canceled order's authorization is voided, never captured.
      if (order.status === 'canceled') throw illegal('a canceled order cannot be captured');
      const authorized = (await this.store.paymentsOfOrders(em, [orderId])).find((p) => p.status === 'authorized');
      if (!authorized) throw illegal(`the ${order.status} order holds no authorized payment`);
      const payment = (await this.store.lockPayment(em, keyOf(authorized)))!;
      if (payment.status !== 'authorized') throw illegal(`the payment is ${payment.status}, not authorized`);
      const route = this.endpoints.route(payment.provider, payment.merchantAccountId, 'capture');
      if (!route.ok) throw new DomainError('COMMAND.NOT_SUPPORTED', 'not supported', route.detail);
      const amount = dto.amount === undefined ? payment.amount : parseRequestAmount(dto.amount, payment.currency);
      if (amount.minor <= 0n || amount.minor > payment.amountMinor) {
        throw illegal(`at most ${payment.amount.toDecimal()} ${payment.currency} may be captured; ${amount.toDecimal()} was asked`);
      }
      const locked = (await this.store.lockOrder(em, orderId))!;
      if (locked.status === 'canceled') throw illegal('a canceled order cannot be captured');
      const written = await this.outbox.add(em, {
        type: PAYMENT_CAPTURE,
        payload: { paymentId: payment.id, orderId, amountMinor: amount.minor.toString() } satisfies PaymentCommandPayload,
        idempotencyKey: captureKey(payment.id),
      });
      if (written === null) {
        // A payment is captured once, under one key: asked again while that capture is on its way it
        // answers the same; one that failed is retried in /admin/outbox (the same key), not anew.
        const existing = await this.messages.lockByKey(em, captureKey(payment.id));
        if (existing?.status === 'dead') {
          throw illegal(`the payment's capture failed: retry its message ${existing.id} in /admin/outbox`);
        }
      }
    });
  }

  /**
   * Cancels an order. Awaiting payment: canceled, and each authorized payment is voided at its
   * provider (where the provider takes voids). Paid, with `refund`: the fulfillment is stopped
   * (`409 already_dispatched` once its dispatch has begun, decided under the lock its claim takes)
   * and a full refund is requested; the order stays paid until the refund succeeds. Returns the
   * HTTP status: 200 for a cancel, 202 for a cancel with a refund.
   */
  async cancel(orderId: string, refund: boolean): Promise<number> {
    if (refund) {
      await this.cancelWithRefund(orderId);
      return 202;
    }
    await runTransaction(this.dataSource, async (em) => {
      const unlocked = await this.mustFindOrder(em, orderId);
      const payments = await this.store.paymentsOfOrders(em, [orderId]);
      const authorized = payments.filter((p) => p.status === 'authorized');
      // Payments before orders, as every transaction locks them.
      await this.store.lockPayments(em, authorized.map(keyOf));
      const order = (await this.store.lockOrder(em, orderId)) ?? unlocked;
      const result = order.cancel();
      if (result.outcome !== 'applied') throw illegal(`a ${order.status} order cannot be canceled`);
      await this.changes.save(em, { order, sourceEventId: null, cause: { kind: 'api', action: 'cancel' } });
      for (const a of authorized) {
        const payment = (await this.store.lockPayment(em, keyOf(a)))!;
        if (payment.status !== 'authorized') continue;
        if (!this.endpoints.route(payment.provider, payment.merchantAccountId, 'void').ok) continue;
        await this.outbox.add(em, { type: PAYMENT_VOID, payload: { paymentId: payment.id, orderId } satisfies PaymentCommandPayload, idempotencyKey: voidKey(payment.id) });
      }
    });
    return 200;
  }

  private async cancelWithRefund(orderId: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await runTransaction(this.dataSource, async (em) => {
          const unlocked = await this.mustFindOrder(em, orderId);
          // Its shipment left: the dispatch has begun (and ended).
          if (unlocked.status === 'fulfilled') throw new DomainError('FULFILLMENT.ALREADY_DISPATCHED', 'the shipment has begun');
          if (unlocked.status !== 'paid') throw illegal(`a ${unlocked.status} order cannot be canceled with a refund; only a paid one whose shipment has not begun`);
          const captured = capturedPaymentOf(unlocked, await this.store.paymentsOfOrders(em, [orderId]));
          if (!captured) throw illegal('the order holds no captured payment to refund');
          const route = this.endpoints.route(captured.provider, captured.merchantAccountId, 'refund');
          if (!route.ok) throw new DomainError('COMMAND.NOT_SUPPORTED', 'not supported', route.detail);
          // First the shipment, under the lock its dispatch's claim takes (and before the payment and
          // the order: a dispatch recording its answer holds that lock, then the order's).
          await this.events.publish(em, { type: 'internal.fulfillment.stop-requested', orderId, reason: 'order canceled with a refund', cause: { kind: 'api', action: 'cancel' } });
          const { order, payment } = await this.lockCaptured(em, orderId);
          // The payment checked above is the one refunded (the same choice, read again under its lock).
          if (payment.id !== captured.id) throw new DomainError('ORDER.BUSY', 'the order changed meanwhile; try again');
          if (order.status === 'fulfilled') throw new DomainError('FULFILLMENT.ALREADY_DISPATCHED', 'the shipment has begun');
          if (order.status !== 'paid') throw illegal(`a ${order.status} order cannot be canceled with a refund`);
          const refundable = await this.refunds.refundable(em, payment);
          if (refundable <= 0n) throw illegal('nothing of the payment is left to refund');
          await this.writeRefund(em, order, payment, Money.fromMinor(refundable, payment.currency), 'order canceled', { kind: 'api', action: 'cancel' });
        });
      } catch (err) {
        // The fulfillment's row was held by a writer that takes the locks in the other order: again.
        if ((err as DomainError)?.code !== 'FULFILLMENT.BUSY') throw err;
        if (attempt === 3) throw new DomainError('ORDER.BUSY', 'the order is being changed; try again');
      }
    }
  }

  async getRefund(id: string): Promise<RefundSnapshot> {
    const refund = await this.refundStore.find(this.dataSource, id);
    if (!refund) throw new DomainError('REFUND.NOT_FOUND', 'no such refund');
    return refundView(refund);
  }

  async refundsOf(orderId: string, page: PageQuery): Promise<Page<RefundSnapshot>> {
    await this.mustFindOrder(this.dataSource.manager, orderId);
    const found = await this.refundStore.listOfOrder(this.dataSource, orderId, page);
    return { items: found.items.map(refundView), nextCursor: found.nextCursor };
  }

  /** The order's captured payment and the order, locked (payments before orders); 409 when it holds none. */
  private async lockCaptured(em: EntityManager, orderId: string): Promise<{ order: Order; payment: Payment }> {
    const order = await this.mustFindOrder(em, orderId);
    const payments = await this.store.paymentsOfOrders(em, [orderId]);
    const candidate = capturedPaymentOf(order, payments);
    if (!candidate) throw illegal('the order holds no succeeded or partially refunded payment');
    const payment = (await this.store.lockPayment(em, keyOf(candidate)))!;
    if (!REFUNDABLE.has(payment.status)) throw illegal(`the payment is ${payment.status}`);
    const locked = (await this.store.lockOrder(em, orderId))!;
    return { order: locked, payment };
  }

  private async writeRefund(em: EntityManager, order: Order, payment: Payment, amount: Money, reason: string | null, cause: HistoryCause): Promise<Refund> {
    const refund = Refund.request({
      orderId: order.id,
      paymentId: payment.id,
      provider: payment.provider,
      merchantAccountId: payment.merchantAccountId,
      amount,
      reason,
    });
    await this.refunds.insert(em, refund, cause, payment);
    this.outbox.writeAtCommit(em, {
      type: PAYMENT_REFUND,
      payload: { paymentId: payment.id, orderId: order.id, refundId: refund.id } satisfies PaymentCommandPayload,
      // The provider's idempotency key: the refund's id, on every attempt, for ever.
      idempotencyKey: refund.id,
    });
    return refund;
  }

  private async mustFindOrder(em: Pick<EntityManager, 'query'>, id: string): Promise<Order> {
    const order = await this.store.findOrder(em, id);
    if (!order) throw new DomainError('ORDER.NOT_FOUND', 'no such order');
    return order;
  }
}

/** The command a message of this type stands for. */
export function commandTypeOf(messageType: string): PaymentCommand['type'] | null {
  for (const [type, message] of Object.entries(COMMAND_MESSAGE_TYPES)) if (message === messageType) return type as PaymentCommand['type'];
  return null;
}

/** The payment a refund of the order is for: the one that paid it, else the first that holds captured money. */
function capturedPaymentOf(order: Order, payments: readonly Payment[]): Payment | undefined {
  const paidBy = order.paidVia?.source === 'payment' ? order.paidVia.paymentId : null;
  return payments.find((p) => p.id === paidBy && REFUNDABLE.has(p.status)) ?? payments.find((p) => REFUNDABLE.has(p.status));
}

function keyOf(p: Payment) {
  return { provider: p.provider, merchantAccountId: p.merchantAccountId, providerPaymentId: p.providerPaymentId };
}

function illegal(detail: string): DomainError {
  return new DomainError('ORDER.ILLEGAL_TRANSITION', 'refused', detail);
}

