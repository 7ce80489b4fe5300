import { Controller, Get, Param, Query, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from '../common/admin.guard';
import { ApiExceptionFilter, apiValidationPipe } from '../common/api-errors';
import { ApiErrorResponses } from '../common/api-docs';
import { ListPaymentsQuery } from './dto/payment.dto';
import { PaymentPage, PaymentView } from './dto/views';
import { uuidParam } from './orders.controller';
import { OrdersService } from './orders.service';

@ApiTags('payments')
@ApiBearerAuth('admin')
@Controller('payments')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
@UsePipes(apiValidationPipe)
export class PaymentsController {
  constructor(private readonly orders: OrdersService) {}

  @Get()
  @ApiOperation({ summary: 'List payments, newest first' })
  @ApiOkResponse({ type: PaymentPage })
  @ApiErrorResponses(400, 401, 503)
  list(@Query() query: ListPaymentsQuery): Promise<PaymentPage> {
    return this.orders.listPayments(query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a payment' })
  @ApiOkResponse({ type: PaymentView })
  @ApiErrorResponses(400, 401, 404, 503)
  get(@Param('id', uuidParam) id: string): Promise<PaymentView> {
    return this.orders.getPayment(id);
  }
}
