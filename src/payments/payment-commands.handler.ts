import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { DomainError } from '../common/domain-error';
import type { HistoryCause } from '../common/history';
import { newPaymentEvent, type OrderEventType } from '../common/host-events';
import { ID_MAX_LENGTH, isPrintableId } from '../common/printable';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import { inCommandSpan } from '../observability/tracing';
import { OutboxAttempt, OutboxHandler, OutboxHandlers } from '../outbox/outbox-handler';
import type { AttemptDecision, HandlerOutcome } from '../outbox/outbox.state';
import { TransactionEvents } from '../outbox/transaction-events';
import { thrownCall } from '../providers/command-answers';
import type { CommandAnswer, PaymentCommand } from '../providers/provider';
import { CommandEndpoints } from './command-endpoints';
import { commandAmount, Money } from './money';
import type { Payment } from './payment.entity';
import { PaymentCapturesStore } from './payment-captures.store';
import { commandTypeOf, COMMAND_MESSAGE_TYPES, PaymentCommandPayload } from './payment-commands.service';
import { PaymentStore, paymentView } from './payment-store';
import { RefundStore } from './refund.store';
import { RefundsService } from './refunds.service';

/**
 * The handler of `payment.refund`, `payment.capture` and `payment.void` (docs/commands.md): one call to
 * the provider's API through its adapter's official client, with the message's idempotency key on
 * every attempt (a worker that crashed after the call and before its commit sends the same key
 * again, and the provider answers the first result). The outbox retries what the answer says may
 * be retried (honouring `Retry-After`) up to `COMMAND_MAX_ATTEMPTS`; the recording of each attempt
 * moves the refund (`submitted`, `succeeded`, `failed`) in the same transaction, or announces the
 * capture or void the provider refused.
 */
@Injectable()
export class PaymentCommandHandler implements OutboxHandler<PaymentCommandPayload>, OnModuleInit {
  readonly maxAttempts: number;
  private readonly timeoutMs: number;

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly handlers: OutboxHandlers,
    private readonly endpoints: CommandEndpoints,
    private readonly payments: PaymentStore,
    private readonly captures: PaymentCapturesStore,
    private readonly refundStore: RefundStore,
    private readonly refunds: RefundsService,
    private readonly events: TransactionEvents,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    this.maxAttempts = options.commandMaxAttempts;
    this.timeoutMs = options.tuning.providerApiTimeoutMs;
  }

  onModuleInit(): void {
    for (const type of Object.values(COMMAND_MESSAGE_TYPES)) this.handlers.register(type, this);
  }

  async handle(attempt: OutboxAttempt<PaymentCommandPayload>): Promise<HandlerOutcome> {
    const type = commandTypeOf(attempt.type);
    if (!type) return { kind: 'dead', reason: `not a payment command: ${attempt.type}` };
    const payment = await this.payments.findPayment(this.dataSource, String(attempt.payload.paymentId));
    if (!payment) return { kind: 'dead', reason: 'payment not found' };
    const command = await this.commandOf(type, attempt.payload, payment);
    if ('dead' in command) return { kind: 'dead', reason: command.dead };
    const route = this.endpoints.route(payment.provider, payment.merchantAccountId, type);
    if (!route.ok) return { kind: 'dead', reason: `not_supported: ${route.detail}` };
    const target = {
      providerPaymentId: payment.providerPaymentId,
      merchantAccountId: payment.merchantAccountId,
      amount: commandAmount(payment.amount),
      captureIds: await this.captures.capturesOf(this.dataSource, payment),
    };
    let answer: CommandAnswer;
    try {
      answer = await inCommandSpan({ type, provider: payment.provider, merchantAccountId: payment.merchantAccountId, traceContext: attempt.traceContext ?? null }, () =>
        route.commands.send(command, target, { endpoint: route.endpoint, idempotencyKey: attempt.idempotencyKey, timeoutMs: this.timeoutMs }),
      );
    } catch (err) {
      answer = thrownCall(err, `the ${payment.provider} adapter`);
    }
    return outcomeOf(type === 'refund' ? refundAnswer(answer) : answer);
  }

  /**
   * The attempt's end, in the transaction that records it: the refund moves as the answer says
   * (`submitted` with the provider's id, `succeeded` when the answer already says so, `failed` once
   * the message is dead), and a capture or void the provider refused is announced.
   */
  async recorded(em: EntityManager, attempt: OutboxAttempt<PaymentCommandPayload>, outcome: HandlerOutcome, decision: AttemptDecision): Promise<void> {
    if (decision.status === 'pending') return;
    const cause: HistoryCause = { kind: 'provider-api', commandId: attempt.payload.refundId ?? attempt.id };
    if (attempt.type === COMMAND_MESSAGE_TYPES.refund) {
      const refund = await this.refundStore.lock(em, String(attempt.payload.refundId));
      if (!refund) return;
      const from = refund.status;
      const now = new Date();
      let moved: boolean;
      if (decision.status === 'dispatched') {
        const result = outcome.kind === 'done' ? (outcome.result ?? {}) : {};
        const id = typeof result.providerRefundId === 'string' && result.providerRefundId !== '' ? result.providerRefundId : null;
        moved = result.status === 'succeeded' ? refund.succeeded(id, now) : refund.submitted(id, now);
      } else {
        moved = refund.failed(decision.reason, now);
      }
      if (moved) await this.refunds.saveMove(em, refund, from, cause, null);
      return;
    }
    if (decision.status !== 'dead') return;
    const type: OrderEventType = attempt.type === COMMAND_MESSAGE_TYPES.capture ? 'payment.capture_failed' : 'payment.void_failed';
    const payment = await this.payments.findPayment(em, String(attempt.payload.paymentId));
    const order = payment ? await this.payments.snapshotOf(em, payment.orderId) : null;
    if (!payment || !order) return;
    await this.events.publish(em, newPaymentEvent(type, { order, payment: paymentView(payment), sourceEventId: null, reason: decision.reason }));
  }

  /**
   * An operator retried a dead refund: it is requested again (the same key, a fresh budget), if its
   * amount is still refundable — what it held was freed when it failed, and another refund may have
   * taken it since (`409`, the retry refused, nothing changed). Payment first, then the refund, as
   * every path locks them.
   */
  async retried(em: EntityManager, message: { id: string; payload: PaymentCommandPayload }): Promise<void> {
    if (!message.payload.refundId) return;
    const found = await this.payments.findPayment(em, String(message.payload.paymentId));
    const payment = found && (await this.payments.lockPayment(em, { provider: found.provider, merchantAccountId: found.merchantAccountId, providerPaymentId: found.providerPaymentId }));
    const refund = await this.refundStore.lock(em, String(message.payload.refundId));
    if (!refund || !payment) return;
    if (refund.status === 'failed') {
      const refundable = await this.refunds.refundable(em, payment);
      if (refund.amountMinor > refundable) {
        throw new DomainError(
          'OUTBOX.ILLEGAL_TRANSITION',
          'refused',
          `the refund's ${refund.amount.toDecimal()} ${refund.currency} is no longer refundable (${Money.fromMinor(refundable, refund.currency).toDecimal()} is): ask for a new refund instead`,
        );
      }
    }
    const from = refund.status;
    if (refund.requestAgain()) await this.refunds.saveMove(em, refund, from, { kind: 'api', action: 'retry' }, null);
  }

  private async commandOf(type: PaymentCommand['type'], payload: PaymentCommandPayload, payment: Payment): Promise<PaymentCommand | { dead: string }> {
    if (type === 'void') return { type: 'void' };
    if (type === 'capture') {
      const minor = BigInt(payload.amountMinor ?? payment.amountMinor.toString());
      return { type: 'capture', amount: commandAmount(Money.fromMinor(minor, payment.currency)) };
    }
    const refund = await this.refundStore.find(this.dataSource, String(payload.refundId));
    if (!refund) return { dead: 'refund not found' };
    return { type: 'refund', refundId: refund.id, amount: commandAmount(refund.amount), reason: refund.reason };
  }
}

/**
 * A refund's answer as the module can keep it: the provider's id must be printable text of at most
 * 255 characters (what the row and its index hold; anything else is no id). A refund accepted but
 * not done, without a usable id, could never be matched by the webhook that confirms it: no clear
 * answer, so the same key asks again (the provider answers the first result).
 */
function refundAnswer(answer: CommandAnswer): CommandAnswer {
  if (!answer.ok) return answer;
  const id = isPrintableId(answer.providerRefundId, ID_MAX_LENGTH) ? answer.providerRefundId : null;
  if (id === null && answer.status !== 'succeeded') {
    return { ok: false, retryable: true, reason: 'the provider accepted the refund without a usable refund id', mayHaveHappened: true };
  }
  return { ...answer, providerRefundId: id };
}

/** What the outbox makes of the provider's answer: done, a retry (with the provider's wait), or dead. */
function outcomeOf(answer: CommandAnswer): HandlerOutcome {
  if (answer.ok) {
    return { kind: 'done', result: { providerRefundId: answer.providerRefundId ?? null, status: answer.status ?? 'pending' } };
  }
  if (!answer.retryable) return { kind: 'dead', reason: answer.reason };
  return { kind: 'retry', reason: answer.reason, retryAfterMs: answer.retryAfterMs, mayHaveHappened: answer.mayHaveHappened === true };
}
