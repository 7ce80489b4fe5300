import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsISO8601, IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { BACKFILL_STATUSES, type BackfillStatus } from './backfill.state';

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const INSTANT_MESSAGE = 'must be an ISO 8601 instant with a time zone, e.g. 2026-11-29T10:00:00Z';


export { BACKFILL_STATUSES, type BackfillStatus } from './backfill.state';

/** `POST /admin/backfill` (docs/operations.md#backfill). */
export class BackfillRequest {
  @ApiProperty({ example: 'stripe-thin', description: 'A stripe endpoint configured with an apiKey' })
  @MaxLength(64)
  @IsNotEmpty()
  @IsString()
  endpointId: string;

  @ApiProperty({ example: '2026-11-26T00:00:00Z', description: 'Events created at or after this instant' })
  @IsISO8601({ strict: true }, { message: `since ${INSTANT_MESSAGE}` })
  @Matches(INSTANT, { message: `since ${INSTANT_MESSAGE}` })
  @IsString({ message: `since ${INSTANT_MESSAGE}` })
  since: string;

  @ApiPropertyOptional({ example: '2026-11-29T12:00:00Z', description: 'Events created before this instant; default now' })
  @IsISO8601({ strict: true }, { message: `until ${INSTANT_MESSAGE}` })
  @Matches(INSTANT, { message: `until ${INSTANT_MESSAGE}` })
  @IsString({ message: `until ${INSTANT_MESSAGE}` })
  @IsOptional()
  until?: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['acct_1Nv0FGQ9RKHgCVdK'],
    description:
      "The connected accounts to walk (each with Stripe-Account), on a merchantAccountIds endpoint: default its list; required when it is [\"*\"]; each must be in the endpoint's list",
  })
  @MaxLength(255, { each: true })
  @IsNotEmpty({ each: true })
  @IsString({ each: true })
  @ArrayMaxSize(1_000)
  @ArrayMinSize(1)
  @IsArray()
  @IsOptional()
  accounts?: string[];
}

export class BackfillStarted {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: ['running'] }) status: 'running';
}

/** `GET /admin/backfill/{id}`. Never holds the endpoint's apiKey. */
export class BackfillView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'stripe-thin' }) endpointId: string;
  @ApiProperty({ enum: BACKFILL_STATUSES, example: 'done' }) status: BackfillStatus;
  @ApiProperty({ example: '2026-11-26T00:00:00.000Z' }) since: string;
  @ApiProperty({ example: '2026-11-29T12:00:00.000Z' }) until: string;
  @ApiProperty({ type: 'integer', minimum: 0, example: 25, description: 'Events the API listed (pages whose progress is saved)' }) listed: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 15, description: 'Events recorded by this backfill (source backfill), then processed as webhooks are' })
  accepted: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 10, description: 'Events already recorded (delivered as webhooks, or by an earlier backfill): nothing changed' })
  duplicates: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 0,
    description: 'Events the webhook route would refuse with a 400 (an id that is not printable text, a body nested too deep, …): counted and skipped',
  })
  refused: number;
  @ApiProperty({
    nullable: true,
    type: String,
    example: 'Stripe events API answered 401: Invalid API Key provided: sk_test_****1234',
    description: 'Why it failed (the API\'s own message), else null',
  })
  error: string | null;
}
