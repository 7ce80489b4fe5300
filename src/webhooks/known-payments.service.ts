import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { BatchWaitTimeout, MicroBatcher } from '../common/micro-batcher';
import { PW_CONNECTION } from '../database/data-source';
import { ProviderEventsService } from '../payments/provider-events.service';
import { InboxStore } from './inbox.store';
import type { ResolvedEndpoint } from './signature-verifier';

/** One question: is this payment one of the endpoint's the service knows? */
interface Question {
  provider: string;
  /** The accounts the endpoint serves; null for any (`["*"]`). */
  accounts: readonly string[] | null;
  resourceId: string;
}

/** Most questions one statement answers, and the longest a question waits for its turn. */
const MAX_BATCH = 256;
const MAX_WAIT_MS = 1_000;

/**
 * Whether the service knows a payment an unsigned delivery names (docs/providers.md#adapters-that-call-out):
 * registered for an order, or named by an event recorded before. Questions asked at once share one
 * pair of statements, one pair at a time, on the module's main pool, never the receive path's own
 * (which records every delivery): a flood of ids nobody has seen costs the database one pair of
 * index lookups at a time, and a question waits its turn at most a second.
 */
@Injectable()
export class KnownPayments {
  private readonly logger = new Logger('WebhookReceive');
  private readonly batcher: MicroBatcher<Question, boolean>;

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly inbox: InboxStore,
    private readonly payments: ProviderEventsService,
  ) {
    this.batcher = new MicroBatcher((questions) => this.answer(questions), { maxBatch: MAX_BATCH, maxInFlight: 1, maxWaitMs: MAX_WAIT_MS });
  }

  /** False when it cannot tell (the database slow or away, or the question not asked within a second). */
  async knows(endpoint: ResolvedEndpoint, resourceId: string): Promise<boolean> {
    const accounts = endpoint.merchantAccountId !== null ? [endpoint.merchantAccountId] : endpoint.merchantAccountIds === '*' ? null : endpoint.merchantAccountIds;
    try {
      return await this.batcher.submit({ provider: endpoint.provider.name, accounts, resourceId });
    } catch (err) {
      // Waiting past its turn is what a flood does: expected, and not worth a line each.
      if (!(err instanceof BatchWaitTimeout)) this.logger.warn(`could not tell whether payment ${resourceId} is known: ${(err as Error)?.message ?? String(err)}`);
      return false;
    }
  }

  /** One pair of statements per kind of endpoint in the batch (usually one). An endpoint of any account asks the inbox only. */
  private async answer(questions: Question[]): Promise<boolean[]> {
    const groups = new Map<string, Question[]>();
    for (const q of questions) {
      const key = JSON.stringify([q.provider, q.accounts]);
      groups.set(key, [...(groups.get(key) ?? []), q]);
    }
    const known = new Set<string>();
    for (const group of groups.values()) {
      const { provider, accounts } = group[0];
      const ids = [...new Set(group.map((q) => q.resourceId))];
      const registered = accounts === null ? [] : await this.payments.registeredAmong(this.dataSource, { provider, accounts, providerPaymentIds: ids });
      const rest = ids.filter((id) => !registered.includes(id));
      const named = await this.inbox.resourcesNamed(this.dataSource, { provider, accounts, resourceIds: rest });
      for (const id of [...registered, ...named]) known.add(JSON.stringify([provider, accounts, id]));
    }
    return questions.map((q) => known.has(JSON.stringify([q.provider, q.accounts, q.resourceId])));
  }
}
