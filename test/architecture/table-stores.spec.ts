import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * One store per table (Immich's repositories): every statement on a table is written in its
 * store, and the rest of the module asks the store. This test reads the SQL of every file under
 * src/ and fails when a file other than a table's store names the table, or reaches a table
 * through the ORM's repositories.
 */
const SRC = join(__dirname, '..', '..', 'src');

const STORES: Record<string, string> = {
  webhook_inbox: 'webhooks/inbox.store.ts',
  orders: 'payments/payment-store.ts',
  payments: 'payments/payment-store.ts',
  payment_captures: 'payments/payment-captures.store.ts',
  order_history: 'payments/order-history.store.ts',
  refunds: 'payments/refund.store.ts',
  idempotency_keys: 'payments/idempotency-key.store.ts',
  fulfillments: 'fulfillment/fulfillment.store.ts',
  outbox_message: 'outbox/outbox.store.ts',
  backfills: 'operations/backfill/backfill.store.ts',
  payment_polls: 'payments/payment-store.ts',
  endpoint_health: 'webhooks/endpoint-health.store.ts',
  endpoint_counts: 'webhooks/endpoint-health.store.ts',
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

/** The tables a text's SQL names: after FROM, JOIN, INTO, UPDATE, TABLE (and DELETE FROM). */
export function tablesNamed(text: string): string[] {
  const names = [...text.matchAll(/\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:ONLY\s+)?"?([a-z_][a-z0-9_]*)"?/g)].map((m) => m[1]);
  return [...new Set(names.filter((n) => n in STORES))];
}

describe('one store per table', () => {
  it('names each table in its store only', () => {
    const found: string[] = [];
    for (const file of files(SRC)) {
      const path = relative(SRC, file);
      for (const table of tablesNamed(readFileSync(file, 'utf8'))) {
        if (STORES[table] !== path) found.push(`${path} names ${table} (its store is ${STORES[table]})`);
      }
    }
    expect(found).toEqual([]);
  });

  it('reaches no table through an ORM repository', () => {
    const found = files(SRC)
      .filter((file) => /\.getRepository\(|@InjectRepository\(/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(found).toEqual([]);
  });

  it('every store exists', () => {
    for (const store of new Set(Object.values(STORES))) expect({ store, exists: statSync(join(SRC, store), { throwIfNoEntry: false })?.isFile() ?? false }).toEqual({ store, exists: true });
  });

  it('the check finds a table named outside its store (it can fail)', () => {
    expect(tablesNamed('SELECT id FROM webhook_inbox w JOIN payments p ON true')).toEqual(['webhook_inbox', 'payments']);
    expect(tablesNamed('DELETE FROM outbox_message WHERE id IN (SELECT id FROM outbox_message)')).toEqual(['outbox_message']);
    expect(tablesNamed("@Controller('orders') and the orders of a customer")).toEqual([]);
    expect(tablesNamed('INSERT INTO idempotency_keys (scope) VALUES ($1)')).toEqual(['idempotency_keys']);
  });
});
