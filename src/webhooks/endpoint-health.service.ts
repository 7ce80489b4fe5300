import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { newEndpointEvent } from '../common/host-events';
import type { ResolvedOptions } from '../config/options';
import { CLOCK, Clock, PW_OPTIONS } from '../config/tokens';
import { PW_CONNECTION } from '../database/data-source';
import { runTransaction } from '../database/transaction';
import { withTimeout } from '../common/with-timeout';
import { TransactionEvents } from '../outbox/transaction-events';
import { EndpointRegistry } from './endpoint-registry';
import { EndpointAlert, EndpointHealthStore } from './endpoint-health.store';
import { EndpointTallies } from './endpoint-tallies';

const HOUR_MS = 3_600_000;

/** One endpoint's health as `GET /admin/endpoints` shows it: never a secret, a key or a token. */
export interface EndpointHealthView {
  id: string;
  provider: string;
  merchantAccountIds: string[];
  lastDeliveryAt: string | null;
  lastAuthenticDeliveryAt: string | null;
  last24h: { accepted: number; duplicate: number; refused: number };
  silent: boolean;
  silentSince: string | null;
  secrets: Array<{ index: number; expiresAt: string | null; lastMatchedAt: string | null }>;
  alerts: EndpointAlert[];
}

/**
 * Endpoint health (docs/operations.md#endpoint-health). The receive path only counts, in memory
 * (EndpointTallies); this service adds each process's counts to the database every
 * `endpointHealthFlushMs` and at shutdown, ends a silence when a flush brings an authentic
 * delivery, and, on the workers' schedule, declares the silences. Each silence is declared once and
 * ended once across every process: a guarded UPDATE decides, in the transaction that writes its
 * event (`endpoint.silent`, `endpoint.resumed`).
 */
@Injectable()
export class EndpointHealthService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('EndpointHealth');
  private timer: NodeJS.Timeout | undefined;
  /** The flush under way: one at a time per process, so a tally is never written twice. */
  private flushing: Promise<void> = Promise.resolve();
  /** Flushes asked for and not settled yet. */
  private pending = 0;
  /** The last flush failed (said once, not at every interval while the database is away). */
  private failing = false;
  /** The endpoints with a silence threshold, and the threshold in (possibly tuned) seconds. */
  private readonly thresholds: Array<{ endpointId: string; seconds: number }>;

  constructor(
    private readonly tallies: EndpointTallies,
    private readonly store: EndpointHealthStore,
    private readonly endpoints: EndpointRegistry,
    private readonly events: TransactionEvents,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    const unitMs = options.tuning.silenceAlertUnitMs;
    this.thresholds = options.endpoints.flatMap((e) =>
      e.silenceAlertSeconds === undefined ? [] : [{ endpointId: e.id, seconds: (e.silenceAlertSeconds * unitMs) / 1000 }],
    );
  }

  onApplicationBootstrap(): void {
    // Watched from the first start that knows them (a silence without any delivery is counted from
    // there); the silence check makes the rows too, should the database be away now.
    void this.store.watch(this.dataSource, this.endpoints.all().map((e) => e.id), this.clock.now()).catch(() => undefined);
    // A tick while a flush is still under way (a slow database) waits for the next one rather than queue up.
    this.timer = setInterval(() => this.pending === 0 && void this.flush().catch(() => undefined), this.options.tuning.endpointHealthFlushMs);
    // The flush must never hold the process up.
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    // A database that is away must not hold the shutdown: those counts are lost, nothing else.
    await withTimeout(this.flush(), 2_000, 'endpoint health flush').catch(() => undefined);
  }

  /**
   * Adds what this process counted since its last flush; a silence its authentic deliveries end is
   * ended with its `endpoint.resumed`. A flush that fails keeps its counts for the next one.
   */
  flush(): Promise<void> {
    this.pending++;
    const run = this.flushing.then(() => this.flushOnce()).finally(() => this.pending--);
    this.flushing = run.catch(() => undefined);
    return run;
  }

  private async flushOnce(): Promise<void> {
    if (this.tallies.isEmpty) return;
    const taken = this.tallies.take();
    try {
      await runTransaction(this.dataSource, async (em) => {
        const ended = await this.store.add(em, taken, this.clock.now());
        await this.announce(em, 'endpoint.resumed', ended);
      });
      if (this.failing) this.logger.log('endpoint health written again');
      this.failing = false;
    } catch (err) {
      this.tallies.putBack(taken);
      if (!this.failing) this.logger.warn(`endpoint health not written (kept for the next flush): ${(err as Error).message}`);
      this.failing = true;
      throw err;
    }
  }

  /**
   * Declares the silences (the workers' scheduled job): this process's counts first, then one
   * guarded UPDATE declares each endpoint past its threshold silent, with its `endpoint.silent`.
   * Answers how many it declared.
   */
  async checkSilence(): Promise<number> {
    await this.flush();
    const now = this.clock.now();
    const declared = await runTransaction(this.dataSource, async (em) => {
      // An endpoint never seen is watched from now: a silence without any delivery is counted from there.
      await this.store.watch(em, this.endpoints.all().map((e) => e.id), now);
      const silent = await this.store.declareSilent(em, this.thresholds, now);
      await this.announce(em, 'endpoint.silent', silent);
      return silent.length;
    });
    // The hours past the day shown are read by nothing.
    await this.store.purgeCounts(this.dataSource, startOfHour(now) - 48 * HOUR_MS);
    return declared;
  }

  /** Every configured endpoint's health, in the configuration's order (this process's counts written first). */
  async list(): Promise<EndpointHealthView[]> {
    await this.flush().catch(() => undefined);
    const now = this.clock.now();
    const endpoints = this.endpoints.all();
    const rows = await this.store.list(this.dataSource, endpoints.map((e) => e.id), startOfHour(now) - 23 * HOUR_MS);
    return endpoints.map((endpoint) => {
      const row = rows.get(endpoint.id);
      return {
        id: endpoint.id,
        provider: endpoint.provider.name,
        merchantAccountIds:
          endpoint.merchantAccountIds === null ? [endpoint.merchantAccountId!] : endpoint.merchantAccountIds === '*' ? ['*'] : [...endpoint.merchantAccountIds],
        lastDeliveryAt: row?.lastDeliveryAt ?? null,
        lastAuthenticDeliveryAt: row?.lastAuthenticAt ?? null,
        last24h: row?.last24h ?? { accepted: 0, duplicate: 0, refused: 0 },
        silent: (row?.silentSince ?? null) !== null,
        silentSince: row?.silentSince ?? null,
        secrets: endpoint.keys.map((_, index) => ({
          index,
          expiresAt: endpoint.expiresAtMs[index] === null ? null : new Date(endpoint.expiresAtMs[index]!).toISOString(),
          lastMatchedAt: row?.secretsMatched[String(index)] ?? null,
        })),
        alerts: row?.alerts ?? [],
      };
    });
  }

  /** Per configured endpoint, 1 while it is silent, else 0 (the gauge `pw_endpoint_silent`). */
  async silentGauge(): Promise<Map<string, number>> {
    const silent = await this.store.silent(this.dataSource);
    return new Map(this.endpoints.all().map((e) => [e.id, silent.has(e.id) ? 1 : 0]));
  }

  /**
   * A provider's health alert about an endpoint (docs/operations.md#endpoint-health), in the
   * processing transaction of its delivery: kept among the endpoint's newest alerts, and, when it
   * says events may be lost, polling of the endpoint's open payments asked for.
   */
  async recordAlert(em: EntityManager, endpointId: string, alert: EndpointAlert, requestsPoll: boolean): Promise<void> {
    await this.store.addAlert(em, endpointId, alert, this.clock.now());
    if (requestsPoll) {
      await this.events.publish(em, { type: 'internal.poll.endpoint-requested', endpointId, reason: `${alert.type} (${alert.eventId})` });
    }
  }

  private async announce(em: EntityManager, type: 'endpoint.silent' | 'endpoint.resumed', changed: ReadonlyArray<{ endpointId: string; silentSince: Date }>): Promise<void> {
    for (const { endpointId, silentSince } of changed) {
      const endpoint = this.endpoints.get(endpointId);
      // An endpoint gone from the configuration is not announced.
      if (!endpoint) continue;
      await this.events.publish(em, newEndpointEvent(type, { id: endpointId, provider: endpoint.provider.name, silentSince: new Date(silentSince).toISOString() }));
      this.logger.log(`endpoint ${endpointId} ${type === 'endpoint.silent' ? 'is silent' : 'resumed'} (silent since ${new Date(silentSince).toISOString()})`);
    }
  }
}

function startOfHour(ms: number): number {
  return ms - (ms % HOUR_MS);
}
