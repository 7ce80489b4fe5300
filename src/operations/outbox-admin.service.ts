import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { keysetQuery, Page, toPage } from '../common/pagination';
import { PW_CONNECTION } from '../database/data-source';
import { OutboxService } from '../outbox/outbox.service';
import type { ListOutboxQuery, OutboxView } from './dto/operations.dto';

@Injectable()
export class OutboxAdminService {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly outbox: OutboxService,
  ) {}

  async list(query: ListOutboxQuery): Promise<Page<OutboxView>> {
    const { text, params, limit } = keysetQuery(
      `SELECT id, type, idempotency_key AS "idempotencyKey", status, attempts, last_error AS "lastError",
              created_at AS "createdAt", dispatched_at AS "dispatchedAt"
         FROM outbox_message`,
      [['status = ?', query.status]],
      query,
    );
    const rows: Array<Omit<OutboxView, 'createdAt' | 'dispatchedAt'> & { createdAt: Date; dispatchedAt: Date | null }> =
      await this.dataSource.query(text, params);
    return toPage(rows, limit, (r) => ({
      ...r,
      createdAt: r.createdAt.toISOString(),
      dispatchedAt: r.dispatchedAt?.toISOString() ?? null,
    }));
  }

  /** A dead message of any type gets a fresh attempt budget (the outbox decides, its handler follows). */
  retry(id: string): Promise<void> {
    return this.outbox.retry(id);
  }
}
