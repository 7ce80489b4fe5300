import { Body, Controller, Get, Post, ValidationPipe } from '@nestjs/common';
import { CreateOrderDto } from './create-order.dto.js';
import { HostOrder } from './order.entity.js';
import { OrdersService } from './orders.service.js';

/** `/api/orders`: the host's own routes, parsed by the host's own body parser. */
@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Get()
  list(): Promise<HostOrder[]> {
    return this.orders.list();
  }

  // The pipe is scoped to the host's route: a global one would also run on the module's routes.
  @Post()
  create(@Body(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true })) body: CreateOrderDto): Promise<HostOrder> {
    return this.orders.create(body.label);
  }
}
