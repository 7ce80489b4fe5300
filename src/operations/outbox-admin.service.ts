import { Injectable } from '@nestjs/common';
import { Page } from '../common/pagination';
import { OutboxService } from '../outbox/outbox.service';
import { OutboxStore } from '../outbox/outbox.store';
import type { ListOutboxQuery, OutboxView } from './dto/operations.dto';

@Injectable()
export class OutboxAdminService {
  constructor(
    private readonly store: OutboxStore,
    private readonly outbox: OutboxService,
  ) {}

  async list(query: ListOutboxQuery): Promise<Page<OutboxView>> {
    const page = await this.store.list(query);
    return {
      ...page,
      items: page.items.map((m) => ({ ...m, createdAt: m.createdAt.toISOString(), dispatchedAt: m.dispatchedAt?.toISOString() ?? null })),
    };
  }

  /** A dead message of any type gets a fresh attempt budget (the outbox decides, its handler follows). */
  retry(id: string): Promise<void> {
    return this.outbox.retry(id);
  }
}
