import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A licence the host grants for a paid order of the module's, in `public.licences` on the host's
 * default connection. One per order: `order_id` is the module's order id.
 */
@Entity({ name: 'licences', schema: 'public' })
export class Licence {
  @PrimaryColumn('uuid', { name: 'order_id' })
  orderId!: string;

  @Column('timestamptz', { name: 'granted_at' })
  grantedAt!: Date;

  /** The `order.paid` event that granted it. */
  @Column('uuid', { name: 'event_id' })
  eventId!: string;
}

/** The table as the host creates it (see LicenceGrants.onModuleInit), like public.orders. */
export const CREATE_LICENCES_TABLE = `CREATE TABLE IF NOT EXISTS public.licences (
  order_id uuid PRIMARY KEY,
  granted_at timestamptz NOT NULL,
  event_id uuid NOT NULL
)`;
