import { Controller, Get, Param, Query, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from '../http/admin.guard';
import { ApiExceptionFilter, ApiValidationPipe } from '../http/api-errors';
import { ApiErrorResponses, fieldError } from '../http/api-docs';
import { ListPaymentsQuery } from './dto/payment.dto';
import { PaymentPage, PaymentView } from './dto/views';
import { uuidParam } from './orders.controller';
import { OrdersService } from './orders.service';

@ApiTags('payments')
// The bearer token only (AdminAuthGuard): basic auth opens the docs, never an API route.
@ApiBearerAuth('admin')
@Controller('payments')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
// The module's pipe, which knows its providers (the host's own among them).
@UsePipes(ApiValidationPipe)
export class PaymentsController {
  constructor(private readonly orders: OrdersService) {}

  @Get()
  @ApiOperation({ operationId: 'listPayments', summary: 'List payments, newest first' })
  @ApiOkResponse({ type: PaymentPage })
  @ApiErrorResponses(400, 401, 503, { 400: fieldError('limit', 'limit must be an integer from 1 to 100') })
  list(@Query() query: ListPaymentsQuery): Promise<PaymentPage> {
    return this.orders.listPayments(query);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getPayment', summary: 'Get a payment' })
  @ApiOkResponse({ type: PaymentView })
  @ApiErrorResponses(401, 404, 503)
  get(@Param('id', uuidParam) id: string): Promise<PaymentView> {
    return this.orders.getPayment(id);
  }
}
