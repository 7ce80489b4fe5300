import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { withTimeout } from '../common/with-timeout';
import { PW_CONNECTION } from '../database/data-source';
import { runTransaction } from '../database/transaction';
import { OutboxHandlers } from './outbox-handler';
import { OutboxRelay } from './outbox-relay.service';
import { OutboxStore } from './outbox.store';
import { activeTraceparent } from '../observability/tracing';

/** The outbox's one service for the rest of the module: an operator's retry, for any message type. */
@Injectable()
export class OutboxService {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly store: OutboxStore,
    private readonly handlers: OutboxHandlers,
    private readonly relay: OutboxRelay,
  ) {}

  /**
   * A dead message gets a fresh attempt budget and is enqueued at once; its handler's own state
   * follows in the same transaction (a failed fulfillment asks again). Anything else is refused: a
   * pending message is already on its way, a dispatched one is done.
   */
  async retry(id: string): Promise<void> {
    await runTransaction(this.dataSource, async (em) => {
      const message = await this.store.retry(em, id);
      await this.handlers.get(message.type)?.retried?.(em, { id, payload: message.payload });
    });
    // Committed: a Redis that is away only delays the dispatch (the relay's sweeper finds it).
    await withTimeout(this.relay.requeue([id], activeTraceparent()), 2_000, 'enqueue').catch(() => undefined);
  }
}
