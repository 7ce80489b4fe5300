import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query, Req, Res, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, type ApiBodyOptions, ApiHeader, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from '../http/admin.guard';
import { ApiExceptionFilter, ApiValidationPipe } from '../http/api-errors';
import { ApiErrorResponses, conflict, fieldError } from '../http/api-docs';
import { DomainError } from '../common/domain-error';
import { PROVIDER_NAMES } from '../config/options';
import { CreateOrderDto, ListOrdersQuery, MarkPaidDto } from './dto/order.dto';
import { RegisterPaymentDto } from './dto/payment.dto';
import { OrderHistoryView, OrderPage, OrderView, PaymentView } from './dto/views';
import { OrdersService } from './orders.service';
import { CancelRequestDto, CaptureRequestDto, ListRefundsQuery, RefundPage, RefundRequestDto, RefundView } from './dto/command.dto';
import { PaymentCommandsService } from './payment-commands.service';
import { MAX_PAYMENTS_PER_ORDER } from './order.entity';
import { inActionSpan } from '../observability/tracing';

/**
 * An id in the path names a resource: one that is not even a UUID names none, so it answers like
 * any unknown id (404 not_found, docs/rest-api.md#errors), without a query.
 */
export const uuidParam = new ParseUUIDPipe({
  exceptionFactory: () => new DomainError('RESOURCE.NOT_FOUND', 'no resource has this id'),
});

/**
 * The request's `Idempotency-Key` (the first, if sent twice): read from the request, not through
 * @Headers(), which would document the header as required.
 */
function idempotencyKeyOf(req: { headers: Record<string, string | string[] | undefined> }): string | undefined {
  const key = req.headers['idempotency-key'];
  return Array.isArray(key) ? key[0] : key;
}

/** The example body of POST /orders: valid as it is, and valid again (nothing in it must be unique). */
export const CREATE_ORDER_EXAMPLE = {
  amount: '49.90',
  currency: 'EUR',
  carrier: 'default',
  shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
  items: [{ sku: 'SKU-42', quantity: 1 }],
};

@ApiTags('orders')
// The bearer token only (AdminAuthGuard): basic auth opens the docs, never an API route.
@ApiBearerAuth('admin')
@Controller('orders')
@UseGuards(AdminGuard)
@UseFilters(ApiExceptionFilter)
// The module's pipe, which knows its providers (the host's own among them).
@UsePipes(ApiValidationPipe)
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly commands: PaymentCommandsService,
  ) {}

  @Post()
  @ApiOperation({ operationId: 'createOrder', summary: 'Place an order', description: 'Safe to retry for 24 h with an `Idempotency-Key`.' })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Up to 255 characters.' })
  @ApiBody({
    type: CreateOrderDto,
    // What Try it out fills in: no `reference` (unique: a second Execute would answer 409) and the
    // demo's own carrier, so every Execute places a new order.
    examples: { order: { summary: 'An order, placed anew on every Execute (no reference)', value: CREATE_ORDER_EXAMPLE } },
  } as ApiBodyOptions)
  @ApiResponse({ status: 201, type: OrderView })
  @ApiErrorResponses(400, 401, 409, 422, 503, {
    400: fieldError('amount', 'amount must be a decimal string such as "49.90"'),
    409: conflict('Another order has this reference', 'reference_taken'),
  })
  async create(
    @Body() dto: CreateOrderDto,
    @Req() req: { headers: Record<string, string | string[] | undefined>; body: unknown },
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ): Promise<OrderView> {
    const answer = await this.orders.create(dto, req.body, idempotencyKeyOf(req));
    res.status(answer.status);
    return answer.body;
  }

  @Get()
  @ApiOperation({ operationId: 'listOrders', summary: 'List orders, newest first' })
  @ApiOkResponse({ type: OrderPage })
  @ApiErrorResponses(400, 401, 503, { 400: fieldError('limit', 'limit must be an integer from 1 to 100') })
  list(@Query() query: ListOrdersQuery): Promise<OrderPage> {
    return this.orders.list(query);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getOrder', summary: 'Get an order with its payments and fulfillment' })
  @ApiOkResponse({ type: OrderView })
  @ApiErrorResponses(401, 404, 503)
  get(@Param('id', uuidParam) id: string): Promise<OrderView> {
    return this.orders.get(id);
  }

  @Get(':id/history')
  @ApiOperation({
    operationId: 'getOrderHistory',
    summary: "The order's history: every move of the order, its payments and its fulfillment, with its cause, oldest first",
  })
  @ApiOkResponse({ type: OrderHistoryView })
  @ApiErrorResponses(401, 404, 503)
  history(@Param('id', uuidParam) id: string): Promise<OrderHistoryView> {
    return this.orders.historyOf(id);
  }

  @Post(':id/payments')
  @ApiOperation({
    operationId: 'registerPayment',
    summary: 'Register a provider payment for the order',
    description:
      '201 a new payment; 200 the same registration again; parked deliveries for it are processed at once. ' +
      '`merchantAccountId` may be left out when the order names its account or the provider\'s endpoints name a single one. ' +
      '409 `payment_already_registered` (another order has it), `account_mismatch` (the order names another merchant account) ' +
      `or \`too_many_payments\` (an order holds at most ${MAX_PAYMENTS_PER_ORDER}).`,
  })
  @ApiResponse({ status: 201, type: PaymentView })
  @ApiResponse({ status: 200, type: PaymentView })
  @ApiErrorResponses(400, 401, 404, 409, 503, {
    400: fieldError('provider', `provider must be one of ${PROVIDER_NAMES.join(', ')}`),
    409: conflict('Registered to another order (`payment_already_registered`), another account than the order\'s (`account_mismatch`), or one payment too many (`too_many_payments`)', 'payment_already_registered'),
  })
  async registerPayment(
    @Param('id', uuidParam) id: string,
    @Body() dto: RegisterPaymentDto,
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ): Promise<PaymentView> {
    const answer = await this.orders.registerPayment(id, dto);
    res.status(answer.status);
    return answer.body;
  }

  @Post(':id/mark-paid')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'markOrderPaid',
    summary: 'Mark the order paid (support)',
    description: 'Through the same rules as a webhook: fulfilled once. An order already paid answers as it is.',
  })
  @ApiOkResponse({ type: OrderView })
  @ApiErrorResponses(400, 401, 404, 409, 503, {
    400: fieldError('reason', 'reason should not be empty'),
    409: conflict('The order is neither awaiting payment nor paid', 'illegal_transition', 'a canceled order cannot be marked paid'),
  })
  markPaid(@Param('id', uuidParam) id: string, @Body() dto: MarkPaidDto): Promise<OrderView> {
    return inActionSpan('mark-paid', () => this.orders.markPaid(id, dto));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'cancelOrder',
    summary: 'Cancel an order',
    description:
      'Awaiting payment: 200, canceled, and each authorized payment is voided at its provider (where it takes voids). ' +
      'Paid, with `{"refund": true}`: 202, its fulfillment is stopped before its dispatch begins and a full refund is requested ' +
      '(409 `already_dispatched` once the dispatch has begun).',
  })
  @ApiBody({ type: CancelRequestDto, required: false })
  @ApiOkResponse({ type: OrderView })
  @ApiResponse({ status: 202, type: OrderView, description: 'Canceled with a refund: the order stays paid until the refund succeeds.' })
  @ApiErrorResponses(400, 401, 404, 409, 422, 503, {
    400: fieldError('refund', 'refund must be true when given'),
    409: conflict('Not awaiting payment (or, with a refund, not paid), or the dispatch has begun (`already_dispatched`)', 'illegal_transition', 'a paid order cannot be canceled'),
    422: conflict('The provider takes no refunds through the module, or its endpoint has no API credentials', 'not_supported'),
  })
  async cancel(
    @Param('id', uuidParam) id: string,
    @Body() dto: CancelRequestDto,
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ): Promise<OrderView> {
    const status = await (dto?.refund === true ? inActionSpan('cancel', () => this.commands.cancel(id, true)) : this.commands.cancel(id, false));
    res.status(status);
    return this.orders.get(id);
  }

  @Post(':id/refunds')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'requestRefund',
    summary: "Refund the order's payment through its provider",
    description:
      'Sent to the provider once, through the outbox, with the refund id as its idempotency key; the payment moves when the provider confirms it. ' +
      'Safe to retry for 24 h with an `Idempotency-Key`.',
  })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Up to 255 characters.' })
  @ApiBody({ type: RefundRequestDto, required: false })
  @ApiResponse({ status: 202, type: RefundView })
  @ApiErrorResponses(400, 401, 404, 409, 422, 503, {
    400: fieldError('amount', 'amount must be a decimal string such as "49.90"'),
    409: conflict('No succeeded payment, or more than is still refundable', 'illegal_transition', '10.00 EUR is refundable; 20.00 was asked'),
    422: conflict('The provider takes no refunds through the module, or its endpoint has no API credentials (`not_supported`), or the Idempotency-Key was used with another body', 'not_supported'),
  })
  async requestRefund(
    @Param('id', uuidParam) id: string,
    @Body() dto: RefundRequestDto,
    @Req() req: { headers: Record<string, string | string[] | undefined>; body: unknown },
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ): Promise<RefundView> {
    const answer = await inActionSpan('refund', () => this.commands.requestRefund(id, dto ?? {}, req.body, idempotencyKeyOf(req)));
    res.status(answer.status);
    return answer.body;
  }

  @Get(':id/refunds')
  @ApiOperation({ operationId: 'listOrderRefunds', summary: "The order's refunds, newest first" })
  @ApiOkResponse({ type: RefundPage })
  @ApiErrorResponses(400, 401, 404, 503, { 400: fieldError('limit', 'limit must be an integer from 1 to 100') })
  refunds(@Param('id', uuidParam) id: string, @Query() query: ListRefundsQuery): Promise<RefundPage> {
    return this.commands.refundsOf(id, query);
  }

  @Post(':id/capture')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'captureOrderPayment',
    summary: "Capture the order's authorized payment at its provider",
    description: 'Sent once per payment, through the outbox; the payment becomes succeeded when the provider confirms the capture.',
  })
  @ApiBody({ type: CaptureRequestDto, required: false })
  @ApiResponse({ status: 202, type: OrderView })
  @ApiErrorResponses(400, 401, 404, 409, 422, 503, {
    400: fieldError('amount', 'amount must be a decimal string such as "49.90"'),
    409: conflict('No authorized payment, or more than its amount', 'illegal_transition', 'the paid order holds no authorized payment'),
    422: conflict('The provider takes no captures through the module, or its endpoint has no API credentials', 'not_supported'),
  })
  async capture(@Param('id', uuidParam) id: string, @Body() dto: CaptureRequestDto): Promise<OrderView> {
    await inActionSpan('capture', () => this.commands.capture(id, dto ?? {}));
    return this.orders.get(id);
  }
}
