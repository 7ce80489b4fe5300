import { Body, Controller, Get, HttpCode, Param, Post, Query, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AdminGuard } from '../common/admin.guard';
import { ApiErrorResponses } from '../common/api-docs';
import { ApiExceptionFilter, apiValidationPipe } from '../common/api-errors';
import { PW_CONNECTION } from '../database/data-source';
import { uuidParam } from '../payments/orders.controller';
import { DeliveryArchiveService } from './delivery-archive.service';
import {
  DeliveryDetail,
  DeliveryPage,
  ListDeliveriesQuery,
  ListOutboxQuery,
  OutboxPage,
  PurgeAnswer,
  QueuedAnswer,
  ReconciliationReport,
  ReconciliationRequest,
} from './dto/operations.dto';
import { OutboxAdminService } from './outbox-admin.service';
import { reconcile } from './reconciliation.service';
import { RetentionService } from './retention.service';

/** The operator's routes (CONTRACT §4): the archive, replay, the outbox, reconciliation, retention. */
@ApiTags('admin')
@ApiBearerAuth('admin')
@Controller('admin')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
@UsePipes(apiValidationPipe)
export class OperationsController {
  constructor(
    private readonly archive: DeliveryArchiveService,
    private readonly outbox: OutboxAdminService,
    private readonly retention: RetentionService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
  ) {}

  @Get('webhook-deliveries')
  @ApiOperation({ summary: 'The delivery archive, newest first', description: 'Every filter is backed by an index; keyset pagination.' })
  @ApiOkResponse({ type: DeliveryPage })
  @ApiErrorResponses(400, 401, 503)
  deliveries(@Query() query: ListDeliveriesQuery): Promise<DeliveryPage> {
    return this.archive.list(query);
  }

  @Get('webhook-deliveries/:id')
  @ApiOperation({ summary: 'One delivery with its headers (signatures redacted) and body' })
  @ApiOkResponse({ type: DeliveryDetail })
  @ApiErrorResponses(400, 401, 404, 503)
  delivery(@Param('id', uuidParam) id: string): Promise<DeliveryDetail> {
    return this.archive.get(id);
  }

  @Post('webhook-deliveries/:id/reprocess')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Run processing again',
    description: 'Safe at any time: the transition guard decides. 409 while its processing is running.',
  })
  @ApiAcceptedResponse({ type: QueuedAnswer })
  @ApiErrorResponses(400, 401, 404, 409, 503)
  async reprocess(@Param('id', uuidParam) id: string): Promise<QueuedAnswer> {
    await this.archive.reprocess(id);
    return { status: 'queued' };
  }

  @Get('outbox')
  @ApiOperation({ summary: 'Outbox messages, newest first' })
  @ApiOkResponse({ type: OutboxPage })
  @ApiErrorResponses(400, 401, 503)
  outboxMessages(@Query() query: ListOutboxQuery): Promise<OutboxPage> {
    return this.outbox.list(query);
  }

  @Post('outbox/:id/retry')
  @HttpCode(202)
  @ApiOperation({ summary: 'Retry a dead message with a fresh attempt budget', description: '409 unless the message is dead.' })
  @ApiAcceptedResponse({ type: QueuedAnswer })
  @ApiErrorResponses(400, 401, 404, 409, 503)
  async retry(@Param('id', uuidParam) id: string): Promise<QueuedAnswer> {
    await this.outbox.retry(id);
    return { status: 'queued' };
  }

  @Post('reconciliation')
  @HttpCode(200)
  @ApiOperation({ summary: 'Compare our records with what the provider says was sent and paid' })
  @ApiOkResponse({ type: ReconciliationReport })
  @ApiErrorResponses(400, 401, 503)
  reconciliation(@Body() body: ReconciliationRequest): Promise<ReconciliationReport> {
    return reconcile(this.dataSource, body);
  }

  @Post('retention/purge')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Purge what the retention window allows now (also runs daily)',
    description: 'Deliveries in a final status and dispatched messages older than INBOX_RETENTION_DAYS, in small batches.',
  })
  @ApiOkResponse({ type: PurgeAnswer })
  @ApiErrorResponses(401, 503)
  purge(): Promise<PurgeAnswer> {
    return this.retention.purge();
  }
}
