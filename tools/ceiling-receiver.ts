/**
 * The ceiling of issue 24's comparison: the least a durable webhook receiver can do, on this
 * machine, with the same load and the same database server. `node:http` + `pg` and nothing else:
 *
 *   POST /webhooks/bench   read the body, verify the Standard Webhooks HMAC (timingSafeEqual),
 *                          queue the row; rows queued while a statement runs go together in the
 *                          next one, a single INSERT … SELECT FROM unnest(…) ON CONFLICT DO
 *                          NOTHING RETURNING message_id (one round trip and one commit for many
 *                          deliveries); each delivery is answered once its statement committed,
 *                          {"status":"accepted"|"duplicate","eventId"}.
 *   GET /health, /health/ready   200.
 *
 * No framework, no JSON parse in Node (PostgreSQL casts the payload to jsonb), no processing: the
 * bench's drain and end-to-end columns are n/a for it. What it measures is how many authentic,
 * durably recorded deliveries these cores take per second; the module cannot exceed it, so the
 * module's figures over it say how much of the machine the rest of the pipeline costs.
 *
 * Environment: DATABASE_URL, PORT, WEBHOOK_SECRET (`whsec_`), CEILING_INFLIGHT (statements at
 * once, 2), CEILING_BATCH (rows per statement at most, 500).
 */
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'pg';
import { CEILING_SCHEMA, standardKey, verifyStandardWebhook } from './baselines';

const PATH = '/webhooks/bench';
const INFLIGHT = Number(process.env.CEILING_INFLIGHT ?? 2);
const MAX_BATCH = Number(process.env.CEILING_BATCH ?? 500);
const key = standardKey(process.env.WEBHOOK_SECRET ?? '');
const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: INFLIGHT + 1 });

interface Pending {
  id: string;
  body: string;
  res: ServerResponse;
}

const queue: Pending[] = [];
let running = 0;

/**
 * Starts a statement while fewer than INFLIGHT run. No timer: a lone delivery goes at once, and
 * under load the deliveries that arrive during a statement's round trip form the next batch
 * (group commit), so the batch size follows the load.
 */
function pump(): void {
  while (running < INFLIGHT && queue.length > 0) {
    const batch = queue.splice(0, MAX_BATCH);
    running++;
    void flush(batch).finally(() => {
      running--;
      pump();
    });
  }
}

async function flush(batch: Pending[]): Promise<void> {
  try {
    const { rows } = await pool.query<{ message_id: string }>(
      `INSERT INTO ceiling.inbox (message_id, endpoint, payload)
       SELECT m, 'bench', p::jsonb FROM unnest($1::text[], $2::text[]) AS t(m, p)
       ON CONFLICT (message_id) DO NOTHING RETURNING message_id`,
      [batch.map((d) => d.id), batch.map((d) => d.body)],
    );
    // One id twice in a batch: the first delivery inserted it, the others are its duplicates.
    const inserted = new Set(rows.map((r) => r.message_id));
    for (const d of batch) {
      const fresh = inserted.delete(d.id);
      answer(d.res, 200, { status: fresh ? 'accepted' : 'duplicate', eventId: d.id });
    }
  } catch (err) {
    for (const d of batch) answer(d.res, 500, { error: 'internal', message: (err as Error).message });
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  if (req.method === 'GET' && (url === '/health' || url === '/health/ready')) {
    req.resume();
    return answer(res, 200, { status: 'ok' });
  }
  if (req.method !== 'POST' || url !== PATH) {
    req.resume();
    return answer(res, 404, { error: 'not_found' });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size > 1_048_576) req.destroy();
    else chunks.push(c);
  });
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const header = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const id = verifyStandardWebhook(key, header, body);
    if (!id) return answer(res, 401, { error: 'invalid_signature' });
    queue.push({ id, body: body.toString('utf8'), res });
    pump();
  });
}

async function main(): Promise<void> {
  await pool.query(CEILING_SCHEMA);
  const server = createServer(handle);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', resolve));
  const stop = () => {
    server.close(() => void pool.end().finally(() => process.exit(0)));
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  void main().catch((err: Error) => {
    console.error(`ceiling receiver failed: ${err.stack ?? err.message}`);
    process.exit(1);
  });
}
