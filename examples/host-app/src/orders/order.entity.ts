import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * The host's own orders, in `public.orders` on the host's default connection. The payment module
 * keeps its own `orders` table in its own schema (`payment_webhooks`); the two never meet.
 */
@Entity({ name: 'orders', schema: 'public' })
export class HostOrder {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('text')
  label!: string;
}

/**
 * The table as the host creates it (see OrdersService.onModuleInit). A real host would ship this
 * as a migration of its own.
 */
export const CREATE_ORDERS_TABLE = `CREATE TABLE IF NOT EXISTS public.orders (id serial PRIMARY KEY, label text NOT NULL)`;
