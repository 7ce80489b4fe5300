import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CREATE_ORDERS_TABLE, HostOrder } from './order.entity.js';

@Injectable()
export class OrdersService implements OnModuleInit {
  constructor(@InjectRepository(HostOrder) private readonly orders: Repository<HostOrder>) {}

  /**
   * The example creates its one table itself, idempotently, instead of `synchronize: true`:
   * synchronize rewrites an existing table to match the entities (dropping columns it does not
   * know), which no host wants on data it already has. A real host runs migrations of its own.
   */
  async onModuleInit(): Promise<void> {
    await this.orders.query(CREATE_ORDERS_TABLE);
  }

  list(): Promise<HostOrder[]> {
    return this.orders.find({ order: { id: 'ASC' } });
  }

  create(label: string): Promise<HostOrder> {
    return this.orders.save(this.orders.create({ label }));
  }
}
