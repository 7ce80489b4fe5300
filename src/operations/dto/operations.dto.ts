import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsISO8601, IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { PROVIDER_NAMES } from '../../config/options';
import { IsKnownProvider, PROVIDER_DESCRIPTION } from '../../http/known-provider';
import { OUTBOX_STATUSES } from '../../outbox/outbox.state';
import { INBOX_STATUSES } from '../../webhooks/inbox.state';

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const INSTANT_MESSAGE = 'must be an ISO 8601 instant with a time zone, e.g. 2026-11-29T10:00:00Z';

export class ListDeliveriesQuery extends PageQuery {
  @ApiPropertyOptional({ enum: INBOX_STATUSES })
  @IsIn(INBOX_STATUSES as unknown as string[], { message: `status must be one of ${INBOX_STATUSES.join(', ')}` })
  @IsOptional()
  status?: string;

  @ApiPropertyOptional({ example: 'stripe-main' })
  @MaxLength(64)
  @IsString()
  @IsOptional()
  endpointId?: string;

  @ApiPropertyOptional({ enum: PROVIDER_NAMES, description: PROVIDER_DESCRIPTION })
  @IsKnownProvider()
  @IsOptional()
  provider?: string;

  @ApiPropertyOptional({ example: 'payment_intent.succeeded' })
  @MaxLength(255)
  @IsString()
  @IsOptional()
  eventType?: string;

  @ApiPropertyOptional({ example: 'evt_1QxAbcDEF' })
  @MaxLength(255)
  @IsString()
  @IsOptional()
  eventId?: string;

  @ApiPropertyOptional({ example: 'pi_3QxAbc', description: "The provider's id of the payment the event is about." })
  @MaxLength(255)
  @IsString()
  @IsOptional()
  resourceId?: string;

  @ApiPropertyOptional({ example: '2026-11-29T00:00:00Z', description: 'receivedAt ≥ from (inclusive).' })
  @IsISO8601({ strict: true }, { message: `from ${INSTANT_MESSAGE}` })
  @Matches(INSTANT, { message: `from ${INSTANT_MESSAGE}` })
  @IsOptional()
  from?: string;

  @ApiPropertyOptional({ example: '2026-11-30T00:00:00Z', description: 'receivedAt < to (exclusive).' })
  @IsISO8601({ strict: true }, { message: `to ${INSTANT_MESSAGE}` })
  @Matches(INSTANT, { message: `to ${INSTANT_MESSAGE}` })
  @IsOptional()
  to?: string;
}

export class DeliveryView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'stripe-main' }) endpointId: string;
  @ApiProperty({ enum: PROVIDER_NAMES, description: PROVIDER_DESCRIPTION }) provider: string;
  @ApiProperty({ example: 'acct_1' }) merchantAccountId: string;
  @ApiProperty({ example: 'evt_1QxAbcDEF' }) eventId: string;
  @ApiProperty({ example: 'payment_intent.succeeded' }) eventType: string;
  @ApiProperty({ nullable: true, type: String, example: 'pi_3QxAbc' }) resourceId: string | null;
  @ApiProperty({ nullable: true, type: String, description: "The provider's delivery id (Factuarea), else null" }) deliveryId: string | null;
  @ApiProperty({ nullable: true, type: String, example: '2024-06-20', description: "The envelope's api_version (Stripe, Factuarea), else null" }) apiVersion: string | null;
  @ApiProperty({ enum: ['webhook', 'backfill'], description: 'webhook, or backfill for an event recorded by a backfill' }) source: 'webhook' | 'backfill';
  @ApiProperty({ enum: INBOX_STATUSES }) status: string;
  @ApiProperty({ nullable: true, type: String, example: 'applied' }) outcome: string | null;
  @ApiProperty({ example: 1 }) attempts: number;
  @ApiProperty({ nullable: true, type: String }) lastError: string | null;
  @ApiProperty({ example: '2026-11-29T10:00:00.123Z' }) receivedAt: string;
  @ApiProperty({ nullable: true, type: String }) processedAt: string | null;
}

export class DeliveryDetail extends DeliveryView {
  @ApiProperty({
    description: 'Headers as received; signature values redacted',
    example: { 'stripe-signature': '[redacted]', 'content-type': 'application/json' },
  })
  headers: Record<string, string>;

  @ApiProperty({ description: 'The envelope, as a JSON value', example: { id: 'evt_1QxAbcDEF', type: 'payment_intent.succeeded' } })
  body: unknown;
}

export class DeliveryPage {
  @ApiProperty({ type: [DeliveryView] }) items: DeliveryView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}

export class QueuedAnswer {
  @ApiProperty({ example: 'queued' }) status: 'queued';
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
  @ApiProperty({ enum: OUTBOX_STATUSES }) status: string;
  @ApiProperty({ example: 1 }) attempts: number;
  @ApiProperty({ nullable: true, type: String, example: 'carrier answered 400 invalid_address' }) lastError: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty({ nullable: true, type: String }) dispatchedAt: string | null;
}

export class OutboxPage {
  @ApiProperty({ type: [OutboxView] }) items: OutboxView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}

export class ReconciliationRequest {
  @ApiProperty({ enum: PROVIDER_NAMES, example: 'stripe', description: PROVIDER_DESCRIPTION })
  @IsKnownProvider()
  provider: string;

  @ApiProperty({ example: 'acct_1' })
  @MaxLength(255)
  @IsNotEmpty()
  @IsString()
  merchantAccountId: string;

  @ApiPropertyOptional({ type: [String], description: 'Event ids the provider says it sent', example: ['evt_1', 'evt_2'] })
  @MaxLength(255, { each: true })
  @IsString({ each: true })
  @ArrayMaxSize(100_000)
  @IsArray()
  @IsOptional()
  eventIds?: string[];

  @ApiPropertyOptional({ type: [String], description: 'Payment ids the provider says were paid', example: ['pi_1'] })
  @MaxLength(255, { each: true })
  @IsString({ each: true })
  @ArrayMaxSize(100_000)
  @IsArray()
  @IsOptional()
  paidResourceIds?: string[];
}

/** The request body of POST /admin/backfill that recovers a report's missing events. */
export class ReconciliationBackfill {
  @ApiProperty({ example: 'stripe-main' }) endpointId: string;
  @ApiProperty({ example: '2026-10-30T12:00:00.000Z', description: '30 days before now: as far back as Stripe lists events' }) since: string;
  @ApiProperty({ example: '2026-11-29T12:00:00.000Z', description: 'Now, when the report was made' }) until: string;
  @ApiPropertyOptional({ type: [String], example: ['acct_1'], description: 'On a merchantAccountIds endpoint: the reconciled account' })
  accounts?: string[];
}

export class ReconciliationReport {
  @ApiProperty({ type: [String], description: 'Event ids never recorded here' }) missingEvents: string[];
  @ApiProperty({ type: [String], description: 'Paid resource ids whose payment is not succeeded (or later) here' })
  missingPaidPayments: string[];
  @ApiProperty({ type: [String], description: 'Orders paid more than 10 minutes ago without a dispatched fulfillment' })
  paidNotFulfilled: string[];
  @ApiProperty({ type: [String], description: 'Orders with more than one shipment id' }) duplicateEffects: string[];
  @ApiProperty({
    type: ReconciliationBackfill,
    nullable: true,
    description:
      'When events are missing and a stripe endpoint with an apiKey serves the account: the POST /admin/backfill body that recovers them; else null',
  })
  backfill: ReconciliationBackfill | null;
}

export class PurgeAnswer {
  @ApiProperty({ example: 1200 }) deleted: number;
}
