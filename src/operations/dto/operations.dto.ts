import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsISO8601,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { PROVIDER_NAMES } from '../../config/options';
import { IsKnownProvider, PROVIDER_DESCRIPTION } from '../../http/known-provider';
import { OUTBOX_STATUSES } from '../../outbox/outbox.state';
import { NEXT_CURSOR } from '../../payments/dto/views';
import { INBOX_OUTCOMES, INBOX_STATUSES } from '../../webhooks/inbox.state';

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const INSTANT_MESSAGE = 'must be an ISO 8601 instant with a time zone, e.g. 2026-11-29T10:00:00Z';

/**
 * Every outcome a delivery in a final status but `failed` carries (docs/webhooks.md#delivery-outcomes).
 * A `failed` one carries its last error's code, which no list closes (a host's handler may throw its own).
 */
const CLOSED_OUTCOMES = [...new Set(Object.values(INBOX_OUTCOMES).flat())];
const OUTCOME_DESCRIPTION =
  'null while `received`; processed: ' + INBOX_OUTCOMES.processed.join(', ') + '; ignored: ' + INBOX_OUTCOMES.ignored.join(', ') +
  '; rejected: ' + INBOX_OUTCOMES.rejected.join(', ') + '; unmatched: ' + INBOX_OUTCOMES.unmatched.join(', ') +
  "; failed: the last error's code (e.g. internal_error, provider_api_unavailable)";

// The filters have no `example`: Try it out fills a parameter's example in, and a filter filled in
// would hide every delivery but the example's. Their descriptions give one instead.
export class ListDeliveriesQuery extends PageQuery {
  @ApiPropertyOptional({ enum: INBOX_STATUSES })
  @IsIn(INBOX_STATUSES as unknown as string[], { message: `status must be one of ${INBOX_STATUSES.join(', ')}` })
  @IsOptional()
  status?: string;

  @ApiPropertyOptional({ description: 'A configured endpoint id (e.g. `stripe-main`).' })
  @MaxLength(64)
  @IsString()
  @IsOptional()
  endpointId?: string;

  @ApiPropertyOptional({ enum: PROVIDER_NAMES, description: PROVIDER_DESCRIPTION })
  @IsKnownProvider()
  @IsOptional()
  provider?: string;

  @ApiPropertyOptional({ description: "The provider's event type (e.g. `payment_intent.succeeded`)." })
  @MaxLength(255)
  @IsString()
  @IsOptional()
  eventType?: string;

  @ApiPropertyOptional({ description: "The provider's event id (e.g. `evt_1QxAbcDEF`)." })
  @MaxLength(255)
  @IsString()
  @IsOptional()
  eventId?: string;

  @ApiPropertyOptional({ description: "The provider's id of the payment the event is about (e.g. `pi_3QxAbc`)." })
  @MaxLength(255)
  @IsString()
  @IsOptional()
  resourceId?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'receivedAt ≥ from (inclusive), e.g. `2026-11-29T00:00:00Z`.' })
  @IsISO8601({ strict: true }, { message: `from ${INSTANT_MESSAGE}` })
  @Matches(INSTANT, { message: `from ${INSTANT_MESSAGE}` })
  @IsOptional()
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'receivedAt < to (exclusive), e.g. `2026-11-30T00:00:00Z`.' })
  @IsISO8601({ strict: true }, { message: `to ${INSTANT_MESSAGE}` })
  @Matches(INSTANT, { message: `to ${INSTANT_MESSAGE}` })
  @IsOptional()
  to?: string;
}

export class DeliveryView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'stripe-main' }) endpointId: string;
  @ApiProperty({ enum: PROVIDER_NAMES, example: 'stripe', description: PROVIDER_DESCRIPTION }) provider: string;
  @ApiProperty({ example: 'acct_demo' }) merchantAccountId: string;
  @ApiProperty({ example: 'evt_1QxAbcDEF' }) eventId: string;
  @ApiProperty({ example: 'payment_intent.succeeded' }) eventType: string;
  @ApiProperty({ nullable: true, type: String, example: 'pi_3QxAbc' }) resourceId: string | null;
  @ApiProperty({ nullable: true, type: String, example: null, description: "The provider's delivery id (Factuarea), else null" }) deliveryId: string | null;
  @ApiProperty({ nullable: true, type: String, example: '2024-06-20', description: "The envelope's api_version (Stripe, Factuarea), else null" }) apiVersion: string | null;
  @ApiProperty({ enum: ['webhook', 'backfill', 'poll'], example: 'webhook', description: 'webhook; backfill for an event recorded by a backfill; poll for what a poll of the provider read' }) source: 'webhook' | 'backfill' | 'poll';
  @ApiProperty({ enum: INBOX_STATUSES, example: 'processed' }) status: string;
  @ApiProperty({
    // One of the closed outcomes of its status, or (failed) an error code, or null (received): an
    // enum alone would refuse a failed delivery's code.
    anyOf: [
      { type: 'string', enum: CLOSED_OUTCOMES },
      { type: 'string', nullable: true, pattern: '^[A-Za-z0-9_.-]{1,64}$', description: "failed: the last error's code; null while received" },
    ],
    example: 'applied',
    description: OUTCOME_DESCRIPTION,
  })
  outcome: string | null;
  @ApiProperty({ type: 'integer', minimum: 0, example: 1, description: 'Processing attempts made' }) attempts: number;
  @ApiProperty({ nullable: true, type: String, example: null, description: 'The last failed attempt\'s `<code>: <message>`, else null' }) lastError: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-29T10:00:00.123Z' }) receivedAt: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', example: '2026-11-29T10:00:00.456Z', description: 'When it reached its final status; null while received' })
  processedAt: string | null;
}

export class DeliveryDetail extends DeliveryView {
  @ApiProperty({
    description: 'Headers as received; signature values redacted',
    example: { 'stripe-signature': '[redacted]', 'content-type': 'application/json' },
  })
  headers: Record<string, string>;

  @ApiProperty({
    description: 'The envelope, as a JSON value',
    example: {
      id: 'evt_1QxAbcDEF',
      object: 'event',
      type: 'payment_intent.succeeded',
      api_version: '2024-06-20',
      account: 'acct_demo',
      data: { object: { id: 'pi_3QxAbc', object: 'payment_intent', amount: 4990, currency: 'eur', status: 'succeeded' } },
    },
  })
  body: unknown;
}

export class DeliveryPage {
  @ApiProperty({ type: [DeliveryView] }) items: DeliveryView[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

/** At most this many ids in one bulk reprocess. */
export const REPROCESS_MAX_IDS = 1_000;
/** At most this many deliveries one bulk reprocess may select. */
export const REPROCESS_MAX_SELECTED = 10_000;

/** The archive's filters a bulk reprocess selects by, validated as the archive's query is. */
export class ReprocessFilter extends PickType(ListDeliveriesQuery, ['status', 'endpointId', 'provider', 'eventType', 'from', 'to'] as const) {}

/** Exactly one of `ids` and `filter` (docs/operations.md#replaying-many-deliveries). */
export class ReprocessRequest {
  @ApiPropertyOptional({
    type: [String],
    format: 'uuid',
    maxItems: REPROCESS_MAX_IDS,
    description: `Delivery ids, 1 to ${REPROCESS_MAX_IDS.toLocaleString('en')}; unknown ids are not an error (and not counted)`,
    example: ['0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b'],
  })
  @IsUUID('all', { each: true, message: 'each value in ids must be a UUID' })
  @ArrayMaxSize(REPROCESS_MAX_IDS, { message: `ids must have at most ${REPROCESS_MAX_IDS} entries` })
  @ArrayMinSize(1, { message: 'ids must have at least one entry' })
  @IsArray({ message: 'ids must be an array of delivery ids' })
  @IsOptional()
  ids?: string[];

  @ApiPropertyOptional({
    type: ReprocessFilter,
    description: `The archive's filters (from inclusive, to exclusive, on receivedAt); at most ${REPROCESS_MAX_SELECTED.toLocaleString('en')} deliveries selected`,
    example: { status: 'failed', endpointId: 'stripe-main', from: '2026-11-29T10:00:00Z', to: '2026-11-29T14:00:00Z' },
  })
  @ValidateNested()
  @IsObject({ message: 'filter must be an object' })
  @IsOptional()
  @Type(() => ReprocessFilter)
  filter?: ReprocessFilter;
}

export class ReprocessAnswer {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 42,
    description:
      'The selected deliveries put on the queue to run now: those opened again (failed, unmatched, rejected) and those still received. ' +
      'Processed and ignored ones, unknown ids and deliveries being processed right now are not counted.',
  })
  queued: number;
}

export class QueuedAnswer {
  @ApiProperty({ enum: ['queued'], example: 'queued' }) status: 'queued';
}

export class ListOutboxQuery extends PageQuery {
  @ApiPropertyOptional({ enum: OUTBOX_STATUSES })
  @IsIn(OUTBOX_STATUSES as unknown as string[], { message: `status must be one of ${OUTBOX_STATUSES.join(', ')}` })
  @IsOptional()
  status?: string;
}

export class OutboxView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'fulfillment.dispatch' }) type: string;
  @ApiProperty({
    description:
      "Unique per intent: for fulfillment.dispatch the carrier's Idempotency-Key (the fulfillment id); for event.<type> `<event id>:<subscriber or sink>`",
    example: '01a2b3c4-d5e6-7f00-8a1b-2c3d4e5f6a7b:Licences.grant',
  })
  idempotencyKey: string;
  @ApiProperty({ enum: OUTBOX_STATUSES, example: 'dead' }) status: string;
  @ApiProperty({ type: 'integer', minimum: 0, example: 15 }) attempts: number;
  @ApiProperty({ nullable: true, type: String, example: 'carrier answered 400 invalid_address', description: 'The last failed attempt, else null' }) lastError: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-29T10:00:00.500Z' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', example: null, description: 'When it was dispatched; null until then' })
  dispatchedAt: string | null;
}

export class OutboxPage {
  @ApiProperty({ type: [OutboxView] }) items: OutboxView[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class ReconciliationRequest {
  @ApiProperty({ enum: PROVIDER_NAMES, example: 'stripe', description: PROVIDER_DESCRIPTION })
  @IsKnownProvider()
  provider: string;

  @ApiProperty({ example: 'acct_demo' })
  @MaxLength(255)
  @IsNotEmpty()
  @IsString()
  merchantAccountId: string;

  @ApiPropertyOptional({ type: [String], description: 'Event ids the provider says it sent', example: ['evt_1QxAbcDEF', 'evt_1QxAbcGHI'] })
  @MaxLength(255, { each: true })
  @IsString({ each: true })
  @ArrayMaxSize(100_000)
  @IsArray()
  @IsOptional()
  eventIds?: string[];

  @ApiPropertyOptional({ type: [String], description: 'Payment ids the provider says were paid', example: ['pi_3QxAbc'] })
  @MaxLength(255, { each: true })
  @IsString({ each: true })
  @ArrayMaxSize(100_000)
  @IsArray()
  @IsOptional()
  paidResourceIds?: string[];
}

/** The request body of POST /admin/backfill that recovers a report's missing events. */
export class ReconciliationBackfill {
  @ApiProperty({ example: 'stripe-thin', description: 'The stripe endpoint with an apiKey that serves the account' }) endpointId: string;
  @ApiProperty({ example: '2026-10-30T12:00:00.000Z', description: '30 days before now: as far back as Stripe lists events' }) since: string;
  @ApiProperty({ example: '2026-11-29T12:00:00.000Z', description: 'Now, when the report was made' }) until: string;
  @ApiPropertyOptional({ type: [String], example: ['acct_demo'], description: 'On a merchantAccountIds endpoint: the reconciled account' })
  accounts?: string[];
}

export class ReconciliationReport {
  // The example: the report on the example request, one of whose events was never received.
  @ApiProperty({ type: [String], example: ['evt_1QxAbcGHI'], description: 'Event ids never recorded here' }) missingEvents: string[];
  @ApiProperty({ type: [String], example: [], description: 'Paid resource ids whose payment is not succeeded (or later) here' })
  missingPaidPayments: string[];
  @ApiProperty({ type: [String], example: [], description: 'Orders paid more than 10 minutes ago without a dispatched fulfillment' })
  paidNotFulfilled: string[];
  @ApiProperty({ type: [String], example: [], description: 'Orders with more than one shipment id' }) duplicateEffects: string[];
  @ApiProperty({
    type: ReconciliationBackfill,
    nullable: true,
    description:
      'When events are missing and a stripe endpoint with an apiKey serves the account: the POST /admin/backfill body that recovers them; else null',
  })
  backfill: ReconciliationBackfill | null;
}

export class PurgeAnswer {
  @ApiProperty({ type: 'integer', minimum: 0, example: 1200 }) deleted: number;
}

export class EndpointCounts {
  @ApiProperty({ type: 'integer', minimum: 0, example: 1180, description: 'Deliveries with at least one new event recorded (answered `accepted`)' }) accepted: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 14, description: 'Deliveries whose every event was recorded before (answered `duplicate`)' }) duplicate: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 2, description: 'Deliveries answered 4xx (a signature, a timestamp, a body, a size: refused for good)' }) refused: number;
}

export class EndpointSecretHealth {
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: 'The position of the secret in the endpoint\'s `secrets` (never the secret)' }) index: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null }) expiresAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-12-01T10:00:00.000Z', description: 'The last delivery it verified' })
  lastMatchedAt: string | null;
}

export class EndpointAlertView {
  @ApiProperty({ example: 'v2.core.health.event_generation_failure.resolved' }) type: string;
  @ApiProperty({ example: 'evt_test_65R9…' }) eventId: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T10:00:01.000Z', description: 'When the service received the notification' }) receivedAt: string;
  @ApiPropertyOptional({ type: String, nullable: true, example: '2026-12-01T09:58:00.000Z', description: 'Stripe: the notification\'s `created`' }) createdAt?: string | null;
  @ApiPropertyOptional({ type: Boolean, nullable: true, example: true, description: 'Stripe: the notification\'s `livemode`' }) livemode?: boolean | null;
  @ApiPropertyOptional({ type: String, nullable: true, example: null, description: 'Stripe: the notification\'s `context` (a connected account)' }) context?: string | null;
}

export class EndpointHealthItem {
  @ApiProperty({ example: 'stripe-main' }) id: string;
  @ApiProperty({ example: 'stripe' }) provider: string;
  @ApiProperty({ type: [String], example: ['acct_1'], description: 'The accounts it serves: its one `merchantAccountId`, its `merchantAccountIds`, or `["*"]`' })
  merchantAccountIds: string[];
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-12-01T10:00:02.000Z', description: 'The last delivery, whatever its answer' })
  lastDeliveryAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-12-01T10:00:00.000Z', description: 'The last delivery answered `accepted` or `duplicate`' })
  lastAuthenticDeliveryAt: string | null;
  @ApiProperty({ type: EndpointCounts, description: 'The current hour and the 23 before it' }) last24h: EndpointCounts;
  @ApiProperty({ example: false }) silent: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null }) silentSince: string | null;
  @ApiProperty({ type: [EndpointSecretHealth] }) secrets: EndpointSecretHealth[];
  @ApiProperty({ type: [EndpointAlertView], description: "The provider's newest health alerts (at most 20), newest first; Stripe thin endpoints: docs/operations.md#endpoint-health" })
  alerts: EndpointAlertView[];
}

export class EndpointHealthList {
  @ApiProperty({ type: [EndpointHealthItem] }) items: EndpointHealthItem[];
}
