import type { IncomingHttpHeaders } from 'node:http';
import { ID_MAX_LENGTH, isPrintableId } from '../../common/printable';
import type { ProviderName } from '../../config/options';
import type { ProviderEvent, RawAmount } from '../../payments/provider-event';

/** What a signature header yields: the content signed besides the body, and the candidates. */
export interface SignatureParts {
  /** Signed unix seconds, checked against the tolerance; null where the scheme signs none. */
  timestamp: number | null;
  /** Signed bytes that precede the raw body (`<t>.`, `<id>.<t>.`). */
  prefix: string;
  /** Decoded `v1` signatures; empty when the header has no `v1` entry (invalid_signature). */
  candidates: Buffer[];
}

/** The identity of a verified envelope, stored on the inbox row. */
export interface EnvelopeIdentity {
  eventId: string;
  eventType: string;
  /** The provider's id of the payment the event is about (or of its own resource). */
  resourceId: string | null;
  /** The provider's delivery id, where it sends one; never part of a key. */
  deliveryId: string | null;
  /**
   * The merchant account the body declares (Stripe `account`, Factuarea `account.id`, Standard
   * `data.account_id`), or null. On a `merchantAccountIds` endpoint it is the event's account.
   */
  account: string | null;
  /** The envelope's `api_version` (Stripe, Factuarea), else null; kept in the archive. */
  apiVersion: string | null;
}

/** A provider's wire format: signature scheme and envelope. One small interface, four implementations. */
export interface ProviderAdapter {
  readonly name: ProviderName;
  /** Lower-case names of the headers kept on the inbox row (signature values are redacted on read). */
  readonly storedHeaders: readonly string[];
  /** Lower-case names of headers whose values are signatures. */
  readonly signatureHeaders: readonly string[];
  /** The HMAC key of a configured secret. */
  key(secret: string): Buffer;
  /** Parses the signature headers; null when absent or unparseable (missing_signature). */
  signature(headers: IncomingHttpHeaders): SignatureParts | null;
  /** Reads the identity of the parsed, verified body; throws MalformedPayloadError. */
  identify(body: Record<string, unknown>, headers: IncomingHttpHeaders): EnvelopeIdentity;
  /**
   * Maps a recorded event to the payment domain's vocabulary; null for a type or resource the
   * service does not act on (the delivery ends `ignored`).
   */
  normalize(body: Record<string, unknown>, eventType: string): ProviderEvent | null;
}

/** An authentic delivery that cannot be recorded as an event (400 malformed_payload). */
export class MalformedPayloadError extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'MalformedPayloadError';
  }
}

// Any whole number that stays exact as a double: a value in milliseconds is a timestamp, far out of
// tolerance (timestamp_out_of_tolerance), not a missing one.
const UNIX_SECONDS = /^\d{1,15}$/;
/** Paymos, Factuarea and Stripe sign in lower-case hex: an upper-case spelling of the same bytes is not what the provider sent. */
const HEX_SHA256 = /^[0-9a-f]{64}$/;
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function parseUnixSeconds(value: string | undefined): number | null {
  return value !== undefined && UNIX_SECONDS.test(value) ? Number(value) : null;
}

/** A lower-case hex SHA-256 signature, or null (a malformed or non-canonical candidate can never match). */
export function decodeHexSignature(value: string): Buffer | null {
  return HEX_SHA256.test(value) ? Buffer.from(value, 'hex') : null;
}

/**
 * Parses `k=v,k=v` signature headers (Paymos, Factuarea, Stripe). Returns null when an entry
 * has no `=`; keeps repeated keys in order.
 */
export function parseKeyValueHeader(value: string | undefined): Array<[string, string]> | null {
  if (value === undefined || value.trim() === '') return null;
  const entries: Array<[string, string]> = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    entries.push([part.slice(0, eq).trim(), part.slice(eq + 1).trim()]);
  }
  return entries;
}

/** The `t=…,v1=…` scheme shared by Factuarea and Stripe. */
export function parseTimestampedHeader(value: string | undefined): SignatureParts | null {
  const entries = parseKeyValueHeader(value);
  if (!entries) return null;
  const stamps = entries.filter(([k]) => k === 't');
  if (stamps.length !== 1) return null;
  const timestamp = parseUnixSeconds(stamps[0][1]);
  if (timestamp === null) return null;
  return { timestamp, prefix: `${stamps[0][1]}.`, candidates: v1Candidates(entries) };
}

export function v1Candidates(entries: Array<[string, string]>): Buffer[] {
  const out: Buffer[] = [];
  for (const [k, v] of entries) {
    if (k !== 'v1') continue;
    const decoded = decodeHexSignature(v);
    if (decoded) out.push(decoded);
  }
  return out;
}

/**
 * A required id string; absent or unusable ids are malformed. Usable is printable text (see
 * common/printable): a control or format character, a line separator or a lone surrogate would make
 * the stored row read as something else, or not be storable at all.
 */
export function requireId(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new MalformedPayloadError(`${what} is missing`);
  if (!isPrintableId(value, ID_MAX_LENGTH)) {
    throw new MalformedPayloadError(`${what} is not a printable string of at most ${ID_MAX_LENGTH} characters`);
  }
  return value;
}

/** An optional id: non-strings and empty strings read as absent; unusable strings are malformed. */
export function optionalId(value: unknown, what: string): string | null {
  if (typeof value !== 'string' || value.length === 0) return null;
  return requireId(value, what);
}

/**
 * A value that is read, never required, and only informative (the API version): a missing or
 * unusable value reads as absent (never malformed), so it is never stored unprintable.
 */
export function lenientId(value: unknown): string | null {
  return isPrintableId(value, ID_MAX_LENGTH) ? value : null;
}

/** An id header, when sent, must name the body's event. */
export function checkIdHeader(headers: IncomingHttpHeaders, name: string, eventId: string): void {
  const value = header(headers, name);
  if (value !== undefined && value !== eventId) {
    throw new MalformedPayloadError(`${name} header does not match the body's event id`);
  }
}

export function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/* Defensive readers for normalize(): a weird body never throws, it reads as absent. */

/** A non-empty string, else null. */
export function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/** Unix seconds (a JSON number) as a Date; anything else, or out of Date's range, is null. */
export function unixDate(value: unknown): Date | null {
  if (typeof value !== 'number' || !Number.isFinite(value)) return null;
  const date = new Date(value * 1000);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** A decimal-string amount as sent; missing or another JSON type is null (parsed later, against the currency). */
export function decimal(value: unknown): RawAmount | null {
  return typeof value === 'string' ? { form: 'decimal', value } : null;
}

/** A minor-units amount as sent (number, or numeric string); missing or another JSON type is null. */
export function minor(value: unknown): RawAmount | null {
  return typeof value === 'number' || typeof value === 'string' ? { form: 'minor', value } : null;
}

