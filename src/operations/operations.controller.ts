import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AdminGuard } from '../http/admin.guard';
import { ApiErrorResponses, conflict, fieldError } from '../http/api-docs';
import { ApiExceptionFilter, ApiValidationPipe } from '../http/api-errors';
import { PROVIDER_NAMES, type ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { PW_OPTIONS } from '../config/tokens';
import { uuidParam } from '../payments/orders.controller';
import { DeliveryArchiveService } from './delivery-archive.service';
import {
  DeliveryDetail,
  DeliveryPage,
  EndpointHealthList,
  ListDeliveriesQuery,
  ListOutboxQuery,
  OutboxPage,
  PurgeAnswer,
  QueuedAnswer,
  ReconciliationReport,
  ReconciliationRequest,
  ReprocessAnswer,
  ReprocessRequest,
} from './dto/operations.dto';
import { OutboxAdminService } from './outbox-admin.service';
import { reconcile } from './reconciliation.service';
import { RetentionService } from './retention.service';
import { inActionSpan } from '../observability/tracing';
import { EndpointHealthService } from '../webhooks/endpoint-health.service';

/** The operator's routes (docs/rest-api.md#admin-routes): endpoint health, the archive, replay, the outbox, reconciliation, retention. */
// Each route's tag says what it holds (api-docs.ts DOCS_TAGS). The bearer token only (AdminAuthGuard).
@ApiBearerAuth('admin')
@Controller('admin')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
// The module's pipe, which knows its providers (the host's own among them).
@UsePipes(ApiValidationPipe)
export class OperationsController {
  constructor(
    private readonly archive: DeliveryArchiveService,
    private readonly outbox: OutboxAdminService,
    private readonly retention: RetentionService,
    private readonly health: EndpointHealthService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  @Get('endpoints')
  @ApiTags('endpoints')
  @ApiOperation({
    operationId: 'listEndpoints',
    summary: "Each configured endpoint's health",
    description:
      'In the configuration order: its last deliveries, the last 24 hours counted, whether it is silent, when each secret last ' +
      "verified a delivery, the provider's health alerts. Never a secret, a key or a token. Each process's counts reach it " +
      'within `endpointHealthFlushMs` (docs/operations.md#endpoint-health).',
  })
  @ApiOkResponse({ type: EndpointHealthList })
  @ApiErrorResponses(401, 503)
  async endpoints(): Promise<EndpointHealthList> {
    return { items: await this.health.list() };
  }

  @Get('webhook-deliveries')
  @ApiTags('webhook deliveries')
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: 'The delivery archive, newest first',
    description: 'Every filter is backed by an index; keyset pagination.',
  })
  @ApiOkResponse({ type: DeliveryPage })
  @ApiErrorResponses(400, 401, 503, {
    400: fieldError('from', 'from must be an ISO 8601 instant with a time zone, e.g. 2026-11-29T10:00:00Z'),
  })
  deliveries(@Query() query: ListDeliveriesQuery): Promise<DeliveryPage> {
    return this.archive.list(query);
  }

  @Get('webhook-deliveries/:id')
  @ApiTags('webhook deliveries')
  @ApiOperation({ operationId: 'getWebhookDelivery', summary: 'One delivery with its headers (signatures redacted) and body' })
  @ApiOkResponse({ type: DeliveryDetail })
  @ApiErrorResponses(401, 404, 503)
  delivery(@Param('id', uuidParam) id: string): Promise<DeliveryDetail> {
    return this.archive.get(id);
  }

  @Post('webhook-deliveries/reprocess')
  @ApiTags('webhook deliveries')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'reprocessWebhookDeliveries',
    summary: 'Run processing again for many deliveries, by ids or by filter',
    description:
      'Exactly one of ids (at most 1,000) and filter (the archive\'s filters; at most 10,000 deliveries selected, else 400 and nothing changes). ' +
      'Each delivery as the single reprocess: safe at any time, the transition guard decides. `queued` counts the deliveries put on the ' +
      'queue: those opened again (failed, unmatched, rejected) and those still received; processed and ignored ones, unknown ids and ' +
      'deliveries being processed right now are left as they are and not counted.',
  })
  @ApiAcceptedResponse({ type: ReprocessAnswer })
  @ApiErrorResponses(400, 401, 503, {
    400: fieldError('filter', 'the filter selects 12500 deliveries; at most 10000 may be reprocessed in one call'),
  })
  async reprocessMany(@Body() body: ReprocessRequest): Promise<ReprocessAnswer> {
    const queued = await inActionSpan('reprocess', () => this.archive.reprocessMany(body));
    return { queued };
  }

  @Post('webhook-deliveries/:id/reprocess')
  @ApiTags('webhook deliveries')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'reprocessWebhookDelivery',
    summary: 'Run processing again',
    description: 'Safe at any time: the transition guard decides. 409 while its processing is running.',
  })
  @ApiAcceptedResponse({ type: QueuedAnswer })
  @ApiErrorResponses(401, 404, 409, 503, {
    409: conflict(
      'Its processing is running right now',
      'processing_in_progress',
      'the delivery is being processed right now; try again shortly',
    ),
  })
  async reprocess(@Param('id', uuidParam) id: string): Promise<QueuedAnswer> {
    await inActionSpan('reprocess', () => this.archive.reprocess(id));
    return { status: 'queued' };
  }

  @Get('outbox')
  @ApiTags('outbox')
  @ApiOperation({ operationId: 'listOutboxMessages', summary: 'Outbox messages, newest first' })
  @ApiOkResponse({ type: OutboxPage })
  @ApiErrorResponses(400, 401, 503, { 400: fieldError('limit', 'limit must be an integer from 1 to 100') })
  outboxMessages(@Query() query: ListOutboxQuery): Promise<OutboxPage> {
    return this.outbox.list(query);
  }

  @Post('outbox/:id/retry')
  @ApiTags('outbox')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'retryOutboxMessage',
    summary: 'Retry a dead message with a fresh attempt budget',
    description: '409 unless the message is dead.',
  })
  @ApiAcceptedResponse({ type: QueuedAnswer })
  @ApiErrorResponses(401, 404, 409, 503, {
    409: conflict('The message is not dead', 'illegal_transition', 'a pending message cannot be retried; only a dead one'),
  })
  async retry(@Param('id', uuidParam) id: string): Promise<QueuedAnswer> {
    await inActionSpan('retry', () => this.outbox.retry(id));
    return { status: 'queued' };
  }

  @Post('reconciliation')
  @ApiTags('reconciliation')
  @HttpCode(200)
  @ApiOperation({ operationId: 'reconcile', summary: 'Compare our records with what the provider says was sent and paid' })
  @ApiOkResponse({ type: ReconciliationReport })
  @ApiErrorResponses(400, 401, 503, {
    400: fieldError('provider', `provider must be one of ${PROVIDER_NAMES.join(', ')}`),
  })
  reconciliation(@Body() body: ReconciliationRequest): Promise<ReconciliationReport> {
    return reconcile(this.dataSource, body, this.options.endpoints);
  }

  @Post('retention/purge')
  @ApiTags('retention')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'purgeRetention',
    summary: 'Purge what the retention window allows now (also runs daily)',
    description: 'Deliveries in a final status and dispatched messages older than INBOX_RETENTION_DAYS, in small batches.',
  })
  @ApiOkResponse({ type: PurgeAnswer })
  @ApiErrorResponses(401, 503)
  purge(): Promise<PurgeAnswer> {
    return this.retention.purge();
  }
}
