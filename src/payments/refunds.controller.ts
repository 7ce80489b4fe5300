import { Controller, Get, Param, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from '../http/admin.guard';
import { ApiExceptionFilter, ApiValidationPipe } from '../http/api-errors';
import { ApiErrorResponses } from '../http/api-docs';
import { RefundView } from './dto/command.dto';
import { uuidParam } from './orders.controller';
import { PaymentCommandsService } from './payment-commands.service';

@ApiTags('refunds')
// The bearer token only (AdminAuthGuard): basic auth opens the docs, never an API route.
@ApiBearerAuth('admin')
@Controller('refunds')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
@UsePipes(ApiValidationPipe)
export class RefundsController {
  constructor(private readonly commands: PaymentCommandsService) {}

  @Get(':id')
  @ApiOperation({ operationId: 'getRefund', summary: 'Get a refund' })
  @ApiOkResponse({ type: RefundView })
  @ApiErrorResponses(401, 404, 503)
  get(@Param('id', uuidParam) id: string): Promise<RefundView> {
    return this.commands.getRefund(id);
  }
}
