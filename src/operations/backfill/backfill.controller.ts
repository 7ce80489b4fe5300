import { Body, Controller, Get, HttpCode, Param, Post, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, type ApiBodyOptions, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from '../../http/admin.guard';
import { ApiErrorResponses, conflict, fieldError } from '../../http/api-docs';
import { ApiExceptionFilter, apiValidationPipe } from '../../http/api-errors';
import { uuidParam } from '../../payments/orders.controller';
import { BackfillRequest, BackfillStarted, BackfillView } from './backfill.dto';
import { BackfillService } from './backfill.service';

/** Backfill from Stripe's Events API (docs/operations.md#backfill): events missed during an outage longer than the provider's retries. */
// Backfill recovers what a reconciliation finds missing: the same tag.
@ApiTags('reconciliation')
@ApiBearerAuth('admin')
@Controller('admin/backfill')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
@UsePipes(apiValidationPipe)
export class BackfillController {
  constructor(private readonly backfills: BackfillService) {}

  @Post()
  @HttpCode(202)
  @ApiOperation({
    operationId: 'startBackfill',
    summary: "Record the events of a window from Stripe's Events API, as if delivered",
    description:
      'For a stripe endpoint with an apiKey. Every event listed is recorded as a webhook would be (same key, source backfill) and processed like one; ' +
      'an event already recorded changes nothing. One backfill per endpoint runs at a time (409 backfill_running).',
  })
  @ApiBody({
    type: BackfillRequest,
    // The demo's stripe endpoint with an apiKey, which names one account: no `accounts`.
    examples: { window: { summary: "A window of the demo's stripe-thin endpoint", value: { endpointId: 'stripe-thin', since: '2026-11-26T00:00:00Z', until: '2026-11-29T12:00:00Z' } } },
  } as ApiBodyOptions)
  @ApiAcceptedResponse({ type: BackfillStarted })
  @ApiErrorResponses(400, 401, 409, 503, {
    400: fieldError('endpointId', 'endpoint stripe-main has no apiKey to read the Stripe events API with'),
    409: conflict(
      'A backfill of this endpoint is running',
      'backfill_running',
      'a backfill of endpoint stripe-main is running; wait for it to end (GET /admin/backfill/{id})',
    ),
  })
  start(@Body() body: BackfillRequest): Promise<BackfillStarted> {
    return this.backfills.start(body);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getBackfill', summary: 'Where a backfill stands: its status and counts' })
  @ApiOkResponse({ type: BackfillView })
  @ApiErrorResponses(401, 404, 503)
  get(@Param('id', uuidParam) id: string): Promise<BackfillView> {
    return this.backfills.get(id);
  }
}
