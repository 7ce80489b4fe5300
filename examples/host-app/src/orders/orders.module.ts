import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { HostOrder } from './order.entity';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';

@Module({
  // The host's default connection (no name): the module's own is a named one.
  imports: [TypeOrmModule.forFeature([HostOrder])],
  controllers: [OrdersController],
  providers: [OrdersService],
})
export class OrdersModule {}
