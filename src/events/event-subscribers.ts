import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { EntityManager } from 'typeorm';
import { isPaymentEventType, PAYMENT_EVENT_TYPES, type PaymentEventType, type AnyPaymentEvent } from '../common/host-events';
import type { ResolvedOptions } from '../config/options';
import { flushWrites } from '../database/transaction';
import { OutboxAttempt, OutboxHandler, OutboxHandlers } from '../outbox/outbox-handler';
import type { HandlerOutcome } from '../outbox/outbox.state';
import { EventMessagePayload, eventMessageType, TransactionEvents } from '../outbox/transaction-events';
import { PW_OPTIONS } from '../config/tokens';
import { ON_PAYMENT_EVENT, OnPaymentEventMetadata } from './on-payment-event.decorator';
import { EventSinks } from './event-sinks';

type AfterCommitSubscriber = (event: AnyPaymentEvent) => unknown;

/**
 * Finds the host's `@OnPaymentEvent` methods at start (Nest's DiscoveryService) and wires them:
 * in-transaction ones as listeners of the transaction's events, after-commit ones (and the HTTP
 * sinks of EVENT_SINKS) as subscriptions, each event written to the outbox once per subscriber.
 * It is also the outbox's handler of every `event.<type>` message: one attempt calls one
 * subscriber (or POSTs to one sink), so one subscriber failing never re-runs another.
 */
@Injectable()
export class EventSubscribers implements OnModuleInit, OutboxHandler<EventMessagePayload> {
  private readonly logger = new Logger('PaymentEvents');
  private readonly afterCommit = new Map<string, AfterCommitSubscriber>();
  readonly maxAttempts: number;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly events: TransactionEvents,
    private readonly handlers: OutboxHandlers,
    private readonly sinks: EventSinks,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    this.maxAttempts = options.eventMaxAttempts;
  }

  onModuleInit(): void {
    for (const type of PAYMENT_EVENT_TYPES) this.handlers.register(eventMessageType(type), this);
    for (const { instance, method, metadata, name } of this.discover()) {
      const types = metadata.types === '*' ? '*' : (metadata.types as PaymentEventType[]);
      if (metadata.options.inTransaction) {
        const call = async (event: AnyPaymentEvent, em: EntityManager) => {
          // The transaction's deferred writes run first, so a failure of theirs is not blamed on the subscriber.
          await flushWrites(em);
          try {
            return await (instance[method] as Function).call(instance, event, em);
          } catch (err) {
            throw new SubscriberFailed(name, event, err);
          }
        };
        if (types === '*') this.events.on('*', call);
        else this.events.on(types, call);
      } else {
        this.afterCommit.set(name, (event) => (instance[method] as Function).call(instance, event));
        this.events.subscribe({ name, types });
      }
      this.logger.log(`${name} subscribes to ${types === '*' ? 'every event' : types.join(', ')}${metadata.options.inTransaction ? ' (in the transaction)' : ''}`);
    }
    for (const sink of this.sinks.all()) this.events.subscribe({ name: sink.name, types: sink.types });
  }

  async handle(attempt: OutboxAttempt<EventMessagePayload>): Promise<HandlerOutcome> {
    const { event, subscriber } = attempt.payload;
    const sink = this.sinks.get(subscriber);
    if (sink) return this.sinks.deliver(sink, event);
    const call = this.afterCommit.get(subscriber);
    if (!call) return { kind: 'dead', reason: `no subscriber "${subscriber}" is registered any more` };
    try {
      await call(event);
      return { kind: 'done' };
    } catch (err) {
      return { kind: 'retry', reason: `${subscriber} threw: ${((err as Error)?.message ?? String(err)).slice(0, 300)}` };
    }
  }

  /** Every `@OnPaymentEvent` method of the app's providers; an unknown event type stops the start. */
  private discover(): Array<{ instance: Record<string, unknown>; method: string; metadata: OnPaymentEventMetadata; name: string }> {
    const found: Array<{ instance: Record<string, unknown>; method: string; metadata: OnPaymentEventMetadata; name: string }> = [];
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      const prototype = Object.getPrototypeOf(instance);
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const metadata = Reflect.getMetadata(ON_PAYMENT_EVENT, prototype[method]) as OnPaymentEventMetadata | undefined;
        if (!metadata) continue;
        const name = `${instance.constructor.name}.${method}`;
        if (metadata.types !== '*') {
          if (metadata.types.length === 0) throw new Error(`@OnPaymentEvent on ${name}: no event type given`);
          const unknown = metadata.types.filter((t) => !isPaymentEventType(t));
          if (unknown.length > 0) {
            throw new Error(
              `@OnPaymentEvent on ${name}: unknown event type ${unknown.map((t) => JSON.stringify(t)).join(', ')} (known: ${PAYMENT_EVENT_TYPES.join(', ')}, or '*')`,
            );
          }
        }
        if (found.some((f) => f.name === name)) throw new Error(`@OnPaymentEvent: two providers subscribe as ${name}; give one class another name`);
        found.push({ instance, method, metadata, name });
      }
    }
    return found;
  }
}

/**
 * An in-transaction subscriber threw: the change rolls back. The host's error is carried as the
 * cause, never read as the module's own: whatever it is (an HttpException, a PostgreSQL data error
 * from the host's own write, an error with a `code`), an API action answers 500 internal_error and
 * a webhook's attempt is recorded as failed and retried.
 */
export class SubscriberFailed extends Error {
  constructor(subscriber: string, event: AnyPaymentEvent, cause: unknown) {
    super(`${subscriber} threw in the transaction of ${event.type}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'SubscriberFailed';
  }
}
