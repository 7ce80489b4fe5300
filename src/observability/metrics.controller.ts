import { Controller, Get, Header, UseFilters, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from '../http/admin.guard';
import { ApiErrorResponses } from '../http/api-docs';
import { ApiExceptionFilter } from '../http/api-errors';
import { MetricsService } from './metrics.service';

@ApiTags('metrics')
// The bearer token only (AdminAuthGuard): basic auth opens the docs, never an API route.
@ApiBearerAuth('admin')
@Controller('metrics')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiOperation({ operationId: 'getMetrics', summary: 'Prometheus metrics', description: 'Text exposition format; admin token required.' })
  @ApiOkResponse({
    description: 'Metrics in the Prometheus text format',
    content: {
      'text/plain': {
        schema: { type: 'string' },
        example: 'pw_webhook_deliveries_total{endpoint="stripe-main",provider="stripe",answer="accepted"} 42',
      },
    },
  })
  @ApiErrorResponses(401, 503)
  async scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
