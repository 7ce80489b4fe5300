import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { HostOrder } from './order.entity.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';

@Module({
  // The host's default connection (no name): the module's own is a named one.
  imports: [TypeOrmModule.forFeature([HostOrder])],
  controllers: [OrdersController],
  providers: [OrdersService],
})
export class OrdersModule {}
