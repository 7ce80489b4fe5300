import { Controller, HttpCode, Param, Post, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from '../../http/admin.guard';
import { ApiErrorResponses, conflict } from '../../http/api-docs';
import { ApiExceptionFilter, ApiValidationPipe } from '../../http/api-errors';
import { inActionSpan } from '../../observability/tracing';
import { uuidParam } from '../../payments/orders.controller';
import { QueuedAnswer } from '../dto/operations.dto';
import { PollingService } from './polling.service';

/** `POST /admin/payments/{id}/poll` (docs/rest-api.md#admin-routes): ask the provider about a payment now. */
@ApiBearerAuth('admin')
@Controller('admin')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
@UsePipes(ApiValidationPipe)
export class PollingController {
  constructor(private readonly polling: PollingService) {}

  @Post('payments/:id/poll')
  @ApiTags('reconciliation')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'pollPayment',
    summary: 'Ask the provider about a payment now',
    description:
      'Whatever its status or age, at its endpoint\'s pace (at most 10 calls a second). What the provider answers is recorded as a delivery of source poll and processed like one: a fact already recorded changes nothing.',
  })
  @ApiAcceptedResponse({ type: QueuedAnswer })
  @ApiErrorResponses(401, 404, 422, 503, {
    422: conflict(
      'No endpoint of the payment\'s provider and account can read it (Adyen has no status read; an endpoint without API credentials)',
      'not_supported',
      'no adyen endpoint of merchant account "m_1" can read its payments (a provider with a status read, and API credentials)',
    ),
  })
  async poll(@Param('id', uuidParam) id: string): Promise<QueuedAnswer> {
    await inActionSpan('poll', () => this.polling.pollNow(id));
    return { status: 'queued' };
  }
}
