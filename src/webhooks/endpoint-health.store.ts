import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { rowsReturned } from '../database/returning';
import type { EndpointTally } from './endpoint-tallies';

/** What a statement runs on: the DataSource (each statement commits on its own), or a transaction. */
type Runner = Pick<EntityManager, 'query'>;

/** A provider's health alert as kept and shown (docs/operations.md#endpoint-health). */
export interface EndpointAlert {
  type: string;
  eventId: string;
  /** ISO 8601: when the service processed the notification. */
  receivedAt: string;
  /** What the notification says besides, none of it personal data (the provider's adapter picks it). */
  [field: string]: string | boolean | number | null | Record<string, string | null>;
}

/** One endpoint's health as stored (every instant ISO 8601). */
export interface EndpointHealthRow {
  endpointId: string;
  lastDeliveryAt: string | null;
  lastAuthenticAt: string | null;
  silentSince: string | null;
  /** Per configured secret index (as a string), the last delivery it verified. */
  secretsMatched: Record<string, string>;
  alerts: EndpointAlert[];
  last24h: { accepted: number; duplicate: number; refused: number };
}

/** The alerts kept per endpoint: the newest. */
export const ALERTS_KEPT = 20;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * Adds the tallies of one process: the instants only move forward (GREATEST, and per secret the
 * later of the two), whichever process writes first. A row is made for an endpoint not seen yet,
 * watched from now.
 */
const ADD_HEALTH_SQL = `
  INSERT INTO endpoint_health AS h (endpoint_id, watched_since, last_delivery_at, last_authentic_at, secrets_matched)
  SELECT t.endpoint_id, $2::timestamptz, t.last_delivery_at, t.last_authentic_at, t.secrets_matched
  FROM unnest($1::text[], $3::timestamptz[], $4::timestamptz[], $5::jsonb[]) AS t(endpoint_id, last_delivery_at, last_authentic_at, secrets_matched)
  ON CONFLICT (endpoint_id) DO UPDATE SET
    last_delivery_at = GREATEST(h.last_delivery_at, EXCLUDED.last_delivery_at),
    last_authentic_at = GREATEST(h.last_authentic_at, EXCLUDED.last_authentic_at),
    secrets_matched = (
      SELECT COALESCE(jsonb_object_agg(k, to_jsonb(latest)), '{}'::jsonb)
      FROM (
        SELECT k, max((v #>> '{}')::timestamptz) AS latest
        FROM (SELECT * FROM jsonb_each(h.secrets_matched) UNION ALL SELECT * FROM jsonb_each(EXCLUDED.secrets_matched)) AS both_sides(k, v)
        GROUP BY k
      ) AS merged
    )`;

/** Adds one process's counts to each hour's: `+=`, so every process's add up. */
const ADD_COUNTS_SQL = `
  INSERT INTO endpoint_counts AS c (endpoint_id, hour, accepted, duplicate, refused)
  SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::int[], $5::int[])
  ON CONFLICT (endpoint_id, hour) DO UPDATE SET
    accepted = c.accepted + EXCLUDED.accepted,
    duplicate = c.duplicate + EXCLUDED.duplicate,
    refused = c.refused + EXCLUDED.refused`;

/**
 * Ends the silence of the endpoints that had an authentic delivery: only a row still silent is
 * changed (its lock taken, then the guard read again), so of two processes ending one silence at
 * once, one does. Answers the silence each ended.
 */
const RESUME_SQL = `
  WITH ending AS (
    SELECT endpoint_id, silent_since FROM endpoint_health
    WHERE endpoint_id = ANY($1::text[]) AND silent_since IS NOT NULL
    ORDER BY endpoint_id
    FOR UPDATE
  )
  UPDATE endpoint_health h SET silent_since = NULL
  FROM ending
  WHERE h.endpoint_id = ending.endpoint_id
  RETURNING h.endpoint_id AS "endpointId", ending.silent_since AS "silentSince"`;

/**
 * Declares silent every endpoint whose last authentic delivery (or, without any, the moment the
 * service first watched it) is older than its silence threshold, and that is not silent already:
 * one guarded statement, so of two processes checking at once, one declares each silence (a row
 * another transaction changed meanwhile is read again under its lock, the guard with it). Rows are
 * locked in the order of their ids, as a flush locks them.
 */
const SILENCE_SQL = `
  WITH due AS (
    SELECT h.endpoint_id, COALESCE(h.last_authentic_at, h.watched_since) + make_interval(secs => t.seconds) AS since
    FROM endpoint_health h
    JOIN unnest($1::text[], $2::float8[]) AS t(endpoint_id, seconds) ON t.endpoint_id = h.endpoint_id
    WHERE h.silent_since IS NULL
      AND COALESCE(h.last_authentic_at, h.watched_since) + make_interval(secs => t.seconds) <= $3::timestamptz
    ORDER BY h.endpoint_id
    FOR UPDATE OF h
  )
  UPDATE endpoint_health h SET silent_since = due.since
  FROM due
  WHERE h.endpoint_id = due.endpoint_id
  RETURNING h.endpoint_id AS "endpointId", h.silent_since AS "silentSince"`;

/** A provider's alert, newest first, the newest ALERTS_KEPT kept; one already kept (its event id) is not added twice. */
const ADD_ALERT_SQL = `
  INSERT INTO endpoint_health AS h (endpoint_id, watched_since, alerts)
  VALUES ($1, $2::timestamptz, jsonb_build_array($3::jsonb))
  ON CONFLICT (endpoint_id) DO UPDATE SET alerts = (
    SELECT COALESCE(jsonb_agg(a ORDER BY n), '[]'::jsonb)
    FROM (
      SELECT a, n FROM jsonb_array_elements(jsonb_build_array($3::jsonb) || h.alerts) WITH ORDINALITY AS e(a, n)
      ORDER BY n LIMIT ${ALERTS_KEPT}
    ) AS kept
  )
  WHERE NOT h.alerts @> jsonb_build_array(jsonb_build_object('eventId', $3::jsonb -> 'eventId'))`;

const LIST_SQL = `
  SELECT h.endpoint_id AS "endpointId", h.last_delivery_at AS "lastDeliveryAt", h.last_authentic_at AS "lastAuthenticAt",
         h.silent_since AS "silentSince", h.secrets_matched AS "secretsMatched", h.alerts,
         COALESCE(sum(c.accepted), 0)::int AS accepted, COALESCE(sum(c.duplicate), 0)::int AS duplicate, COALESCE(sum(c.refused), 0)::int AS refused
  FROM endpoint_health h
  LEFT JOIN endpoint_counts c ON c.endpoint_id = h.endpoint_id AND c.hour >= $2::timestamptz
  WHERE h.endpoint_id = ANY($1::text[])
  GROUP BY h.endpoint_id`;

/**
 * The one owner of tables endpoint_health and endpoint_counts (docs/operations.md#endpoint-health):
 * written by the flushes of each process's tallies, the silence check and the processing of a
 * provider's health alert; never by the receive path.
 */
@Injectable()
export class EndpointHealthStore {
  /** A row for each endpoint not seen yet, watched from `nowMs` (its silence is counted from there until it has an authentic delivery). */
  async watch(runner: Runner, endpointIds: readonly string[], nowMs: number): Promise<void> {
    if (endpointIds.length === 0) return;
    await runner.query(
      `INSERT INTO endpoint_health (endpoint_id, watched_since) SELECT unnest($1::text[]), $2::timestamptz ON CONFLICT (endpoint_id) DO NOTHING`,
      [endpointIds, iso(nowMs)],
    );
  }

  /** Adds one process's tallies; answers the silences this ended (an authentic delivery came), for their events. */
  async add(em: EntityManager, tallies: readonly EndpointTally[], nowMs: number): Promise<Array<{ endpointId: string; silentSince: Date }>> {
    if (tallies.length === 0) return [];
    // A fixed order, so two processes' flushes lock the same rows in the same order.
    const sorted = [...tallies].sort((a, b) => a.endpointId.localeCompare(b.endpointId));
    await em.query(ADD_HEALTH_SQL, [
      sorted.map((t) => t.endpointId),
      iso(nowMs),
      sorted.map((t) => iso(t.lastDeliveryAt)),
      sorted.map((t) => iso(t.lastAuthenticAt)),
      sorted.map((t) => JSON.stringify(Object.fromEntries([...t.secretsMatched].map(([index, at]) => [String(index), iso(at)])))),
    ]);
    const hours = sorted.flatMap((t) => [...t.hours].sort(([a], [b]) => a - b).map(([hour, counts]) => ({ endpointId: t.endpointId, hour, ...counts })));
    if (hours.length > 0) {
      await em.query(ADD_COUNTS_SQL, [
        hours.map((h) => h.endpointId),
        hours.map((h) => iso(h.hour)),
        hours.map((h) => h.accepted),
        hours.map((h) => h.duplicate),
        hours.map((h) => h.refused),
      ]);
    }
    const authentic = sorted.filter((t) => t.lastAuthenticAt !== null).map((t) => t.endpointId);
    if (authentic.length === 0) return [];
    return rowsReturned(em, RESUME_SQL, [authentic]);
  }

  /** Declares silent the endpoints past their threshold at `nowMs` and not silent yet; answers those it declared. */
  async declareSilent(em: EntityManager, thresholds: ReadonlyArray<{ endpointId: string; seconds: number }>, nowMs: number): Promise<Array<{ endpointId: string; silentSince: Date }>> {
    if (thresholds.length === 0) return [];
    return rowsReturned(em, SILENCE_SQL, [thresholds.map((t) => t.endpointId), thresholds.map((t) => t.seconds), iso(nowMs)]);
  }

  /** Keeps a provider's health alert among the endpoint's newest; false when it was kept already (the same event id). */
  async addAlert(em: EntityManager, endpointId: string, alert: EndpointAlert, nowMs: number): Promise<boolean> {
    const rows = await rowsReturned<{ endpoint_id: string }>(em, `${ADD_ALERT_SQL} RETURNING endpoint_id`, [endpointId, iso(nowMs), JSON.stringify(alert)]);
    return rows.length > 0;
  }

  /** The endpoints' health, with their counts of the hours from `sinceMs` on. */
  async list(runner: Runner, endpointIds: readonly string[], sinceMs: number): Promise<Map<string, EndpointHealthRow>> {
    const rows: Array<Omit<EndpointHealthRow, 'last24h'> & { accepted: number; duplicate: number; refused: number; lastDeliveryAt: Date | null; lastAuthenticAt: Date | null; silentSince: Date | null }> =
      await runner.query(LIST_SQL, [endpointIds, iso(sinceMs)]);
    const isoOf = (d: Date | null) => (d === null ? null : new Date(d).toISOString());
    return new Map(
      rows.map((r) => [
        r.endpointId,
        {
          endpointId: r.endpointId,
          lastDeliveryAt: isoOf(r.lastDeliveryAt),
          lastAuthenticAt: isoOf(r.lastAuthenticAt),
          silentSince: isoOf(r.silentSince),
          secretsMatched: Object.fromEntries(Object.entries(r.secretsMatched).map(([k, v]) => [k, new Date(v).toISOString()])),
          alerts: r.alerts,
          last24h: { accepted: r.accepted, duplicate: r.duplicate, refused: r.refused },
        },
      ]),
    );
  }

  /** The endpoints silent now (the gauge `pw_endpoint_silent`). */
  async silent(runner: Runner): Promise<Set<string>> {
    const rows: Array<{ endpoint_id: string }> = await runner.query(`SELECT endpoint_id FROM endpoint_health WHERE silent_since IS NOT NULL`);
    return new Set(rows.map((r) => r.endpoint_id));
  }

  /** Forgets the counts of hours before `beforeMs` (nothing reads them). */
  async purgeCounts(runner: Runner, beforeMs: number): Promise<void> {
    await runner.query(`DELETE FROM endpoint_counts WHERE hour < $1::timestamptz`, [iso(beforeMs)]);
  }
}
