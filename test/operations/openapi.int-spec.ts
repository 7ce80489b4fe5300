import request from 'supertest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { AUTH, createTestApp, TestApp } from '../support/app';

/**
 * CONTRACT §4: `/docs-json` is a valid OpenAPI 3 document of every route of the contract, with
 * its security and its error answers.
 */

type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description?: string; content?: Record<string, MediaType> }>;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { content?: Record<string, MediaType> };
};
type MediaType = { schema?: Record<string, any>; example?: unknown; examples?: Record<string, { value?: unknown }> };
type Doc = {
  openapi: string;
  info: { title: string; license?: { name?: string; url?: string } };
  servers?: Array<{ url: string; description?: string }>;
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes?: Record<string, Record<string, unknown>>; schemas?: Record<string, Record<string, any>> };
  security?: unknown;
};

/**
 * Every route of CONTRACT §2–§4, as OpenAPI spells its path, with its operationId: client
 * generators name their methods after it, so it is part of the contract and does not change.
 */
const OPERATION_IDS: Array<[string, string, string]> = [
  ['post', '/webhooks/{endpointId}', 'receiveWebhook'],
  ['post', '/orders', 'createOrder'],
  ['get', '/orders', 'listOrders'],
  ['get', '/orders/{id}', 'getOrder'],
  ['post', '/orders/{id}/payments', 'registerPayment'],
  ['post', '/orders/{id}/mark-paid', 'markOrderPaid'],
  ['post', '/orders/{id}/cancel', 'cancelOrder'],
  ['get', '/orders/{id}/history', 'getOrderHistory'],
  ['post', '/orders/{id}/refunds', 'requestRefund'],
  ['get', '/orders/{id}/refunds', 'listOrderRefunds'],
  ['get', '/refunds/{id}', 'getRefund'],
  ['post', '/orders/{id}/capture', 'captureOrderPayment'],
  ['get', '/payments', 'listPayments'],
  ['get', '/payments/{id}', 'getPayment'],
  ['get', '/admin/endpoints', 'listEndpoints'],
  ['get', '/admin/webhook-deliveries', 'listWebhookDeliveries'],
  ['get', '/admin/webhook-deliveries/{id}', 'getWebhookDelivery'],
  ['post', '/admin/webhook-deliveries/{id}/reprocess', 'reprocessWebhookDelivery'],
  ['post', '/admin/webhook-deliveries/reprocess', 'reprocessWebhookDeliveries'],
  ['get', '/admin/outbox', 'listOutboxMessages'],
  ['post', '/admin/outbox/{id}/retry', 'retryOutboxMessage'],
  ['post', '/admin/reconciliation', 'reconcile'],
  ['post', '/admin/retention/purge', 'purgeRetention'],
  ['post', '/admin/backfill', 'startBackfill'],
  ['get', '/admin/backfill/{id}', 'getBackfill'],
  ['post', '/admin/payments/{id}/poll', 'pollPayment'],
  ['get', '/health', 'checkLiveness'],
  ['get', '/health/ready', 'checkReadiness'],
  ['get', '/metrics', 'getMetrics'],
];
const CONTRACT_ROUTES: Array<[string, string]> = OPERATION_IDS.map(([m, p]) => [m, p]);

/** Each route's own 409 (CONTRACT §3, §4): what it refuses, not a copy of another route's. */
const CONFLICTS: Array<[string, string, Record<string, string>]> = [
  ['post', '/orders', { error: 'reference_taken' }],
  ['post', '/orders/{id}/payments', { error: 'payment_already_registered' }],
  ['post', '/orders/{id}/mark-paid', { error: 'illegal_transition', detail: 'a canceled order cannot be marked paid' }],
  ['post', '/orders/{id}/cancel', { error: 'illegal_transition', detail: 'a paid order cannot be canceled' }],
  ['post', '/orders/{id}/refunds', { error: 'illegal_transition', detail: '10.00 EUR is refundable; 20.00 was asked' }],
  ['post', '/orders/{id}/capture', { error: 'illegal_transition', detail: 'the paid order holds no authorized payment' }],
  ['post', '/admin/webhook-deliveries/{id}/reprocess', { error: 'processing_in_progress', detail: expect.any(String) }],
  ['post', '/admin/outbox/{id}/retry', { error: 'illegal_transition', detail: expect.stringMatching(/cannot be retried; only a dead one$/) }],
  ['post', '/admin/backfill', { error: 'backfill_running', detail: expect.stringMatching(/^a backfill of endpoint .+ is running/) }],
];

/**
 * Where the recommended rules do not fit, by rule and JSON pointer, each with its reason. Nothing
 * else is ignored, and no rule is turned off.
 * - operation-4xx-response on /health and /health/ready: liveness and readiness have no client
 *   error to report; they answer 200 or 503 only (the '/health/ready documents its 503' test pins
 *   exactly that), and a made-up 4xx would be a false statement in the document.
 */
const LINT_IGNORES: Record<string, string[]> = {
  'operation-4xx-response': ['#/paths/~1health/get/responses', '#/paths/~1health~1ready/get/responses'],
};

const OPEN_ROUTES = new Set(['post /webhooks/{endpointId}', 'get /health', 'get /health/ready']);
const HEALTH = new Set(['get /health', 'get /health/ready']);
const ADMIN_ROUTES = CONTRACT_ROUTES.filter(([m, p]) => !OPEN_ROUTES.has(`${m} ${p}`));
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** The example bodies a response documents, wherever OpenAPI lets it put them. */
function examplesOf(media: MediaType | undefined): unknown[] {
  if (!media) return [];
  const out: unknown[] = [];
  if (media.example !== undefined) out.push(media.example);
  for (const e of Object.values(media.examples ?? {})) if (e.value !== undefined) out.push(e.value);
  if (media.schema?.example !== undefined) out.push(media.schema.example);
  return out;
}

/** Does a schema (after following $ref) carry an example, on itself or on its properties? */
function schemaExamples(doc: Doc, name: string): Record<string, unknown> {
  const schema = doc.components.schemas![name];
  const out: Record<string, unknown> = {};
  if (schema.example !== undefined) out['(schema)'] = schema.example;
  for (const [prop, def] of Object.entries<Record<string, any>>(schema.properties ?? {})) {
    if (def.example !== undefined) out[prop] = def.example;
  }
  return out;
}

/**
 * Runs `script` in a plain Node process, with `input` as JSON on its stdin; it writes its answer
 * as JSON on stdout. The validators below are ESM-only (@redocly/openapi-core, and
 * json-schema-ref-parser under @apidevtools/swagger-parser), which Node loads natively but Jest's
 * module runtime (Node 20) refuses, and the Jest config is not ours to change. The document
 * travels as JSON, i.e. as a structured clone.
 */
function runInNode<T>(script: string, input: unknown): Promise<T> {
  const wrapped = `
    let text = '';
    process.stdin.on('data', (c) => (text += c));
    process.stdin.on('end', () => {
      const input = JSON.parse(text);
      Promise.resolve()
        .then(async () => { ${script} })
        .then((answer) => process.stdout.write(JSON.stringify(answer)), (err) => { console.error(err); process.exit(1); });
    });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', wrapped], { cwd: join(__dirname, '..', '..'), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`validator process exited ${code}: ${err}`));
      }
    });
    child.stdin.end(JSON.stringify(input));
  });
}

/** `SwaggerParser.validate(structuredClone(doc))` with the installed @apidevtools/swagger-parser. */
function swaggerParserValidate(doc: unknown): Promise<{ valid: boolean; message?: string; title?: string }> {
  return runInNode(
    `
    const SwaggerParser = require('@apidevtools/swagger-parser');
    return SwaggerParser.validate(structuredClone(input)).then(
      (api) => ({ valid: true, title: api.info.title }),
      (err) => ({ valid: false, message: String(err && err.message) }),
    );`,
    doc,
  );
}

type LintProblem = { severity: string; ruleId: string; message: string; pointer?: string; ignored: boolean };

/**
 * The installed @redocly/openapi-core (what `redocly lint` runs) on the document: the
 * `recommended` ruleset as it is, the problems at LINT_IGNORES marked ignored.
 */
function redoclyLint(doc: unknown, ignores: Record<string, string[]>): Promise<LintProblem[]> {
  return runInNode(
    `
    const { createConfig, lintFromString } = await import('@redocly/openapi-core');
    const absoluteRef = '/docs-json';
    const ignore = { [absoluteRef]: Object.fromEntries(Object.entries(input.ignores).map(([rule, pointers]) => [rule, new Set(pointers)])) };
    const config = await createConfig({ extends: ['recommended'] }, { ignore });
    const problems = await lintFromString({ source: JSON.stringify(input.doc), absoluteRef, config });
    return problems.map((p) => ({
      severity: p.severity,
      ruleId: p.ruleId,
      message: p.message,
      pointer: p.location && p.location[0] && p.location[0].pointer,
      ignored: Boolean(p.ignored),
    }));`,
    { doc, ignores },
  );
}

/** The operations of the document, with their method and path. */
function operationsOf(doc: Doc): Array<{ method: string; path: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([m]) => HTTP_METHODS.has(m))
      .map(([method, op]) => ({ method, path, op })),
  );
}

/** The top-level properties of an operation's JSON request body (after following its $ref). */
function bodyProperties(doc: Doc, op: Operation): string[] {
  const schema = op.requestBody?.content?.['application/json']?.schema;
  const resolved = schema?.$ref ? doc.components.schemas![String(schema.$ref).split('/').pop()!] : schema;
  return Object.keys(resolved?.properties ?? {});
}

describe('the OpenAPI document (CONTRACT §4)', () => {
  let t: TestApp;
  let doc: Doc;

  beforeAll(async () => {
    t = await createTestApp();
    const res = await request(t.app.getHttpServer()).get('/docs-json').set(AUTH);
    if (res.status !== 200) throw new Error(`/docs-json answered ${res.status}`);
    doc = res.body;
  });
  afterAll(() => t?.close());

  it('is OpenAPI 3 and passes the real validator (@apidevtools/swagger-parser)', async () => {
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(await swaggerParserValidate(doc)).toEqual({ valid: true, title: 'Payment webhooks' });
  });

  it.each(CONTRACT_ROUTES)('documents %s %s', (method, path) => {
    expect(Object.keys(doc.paths)).toContain(path);
    expect(Object.keys(doc.paths[path])).toContain(method);
  });

  it('documents no route outside the contract', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => HTTP_METHODS.has(m))
        .map((m) => `${m} ${path}`),
    );
    expect(documented.sort()).toEqual(CONTRACT_ROUTES.map(([m, p]) => `${m} ${p}`).sort());
  });

  it('declares the admin security scheme: bearer "admin" only (basic auth is for /docs, not listed; CONTRACT §4)', () => {
    const schemes = doc.components.securitySchemes ?? {};
    expect(schemes.admin).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(schemes)).toEqual(['admin']);
  });

  it.each(ADMIN_ROUTES)('%s %s requires the bearer "admin" security', (method, path) => {
    const op = doc.paths[path][method];
    expect(op.security).toEqual(expect.arrayContaining([{ admin: [] }]));
    for (const requirement of op.security!) {
      for (const scheme of Object.keys(requirement)) expect(Object.keys(doc.components.securitySchemes ?? {})).toContain(scheme);
    }
  });

  it('webhooks and health declare no security, and there is no global requirement', () => {
    expect(doc.security).toBeUndefined();
    for (const route of OPEN_ROUTES) {
      const [method, path] = route.split(' ');
      const security = doc.paths[path][method].security;
      expect({ route, security: security ?? [] }).toEqual({ route, security: [] });
    }
  });

  it('webhooks and health say so explicitly: security: [] (redocly security-defined)', () => {
    for (const route of OPEN_ROUTES) {
      const [method, path] = route.split(' ');
      expect({ route, security: doc.paths[path][method].security }).toEqual({ route, security: [] });
    }
  });

  it('no security scheme claims the static admin token is a JWT', () => {
    for (const [name, scheme] of Object.entries(doc.components.securitySchemes ?? {})) {
      expect({ name, bearerFormat: scheme.bearerFormat }).not.toEqual({ name, bearerFormat: 'JWT' });
      expect({ name, description: typeof scheme.description === 'string' && scheme.description.length > 0 }).toEqual({ name, description: true });
    }
    expect(JSON.stringify(doc.components.securitySchemes)).not.toMatch(/JWT/i);
  });

  it('passes `redocly lint` (recommended): no error, no warning', async () => {
    const problems = await redoclyLint(doc, LINT_IGNORES);
    const shown = (p: LintProblem) => `${p.severity} ${p.ruleId} at ${p.pointer}: ${p.message}`;
    // The lists themselves are compared, so a failure prints every problem.
    expect(problems.filter((p) => !p.ignored && p.severity === 'error').map(shown)).toEqual([]);
    expect(problems.filter((p) => !p.ignored && p.severity === 'warn').map(shown)).toEqual([]);
    expect(problems.filter((p) => !p.ignored).map(shown)).toEqual([]);
    // Each ignore still matches a problem: none outlives its reason.
    const ignored = problems.filter((p) => p.ignored).map((p) => `${p.ruleId} ${p.pointer}`);
    expect(ignored.sort()).toEqual(Object.entries(LINT_IGNORES).flatMap(([rule, pointers]) => pointers.map((at) => `${rule} ${at}`)).sort());
  });

  it('names its servers and its license (MIT)', () => {
    expect(doc.servers?.length).toBeGreaterThan(0);
    // The paths carry any global and route prefix: the server is the origin serving the document.
    expect(doc.servers![0].url).toBe('/');
    expect(doc.info.license).toEqual({ name: 'MIT', url: expect.stringMatching(/^https:\/\//) });
  });

  // Issue 22: the tags are named for what they hold ("operations" held health and metrics, the
  // operator's routes were under "admin").
  it('declares every tag an operation uses, each with a description', () => {
    const used = new Set(operationsOf(doc).flatMap(({ op }) => op.tags ?? []));
    expect([...used].sort()).toEqual(
      ['endpoints', 'health', 'metrics', 'orders', 'outbox', 'payments', 'reconciliation', 'refunds', 'retention', 'webhook deliveries', 'webhooks'].sort(),
    );
    const declared = new Map((doc.tags ?? []).map((t) => [t.name, t.description]));
    for (const tag of used) {
      expect({ tag, description: declared.get(tag) }).toEqual({ tag, description: expect.stringMatching(/^[A-Z].{20,}\.$/) });
    }
  });

  it.each(OPERATION_IDS)('%s %s has exactly one tag, the one named for what it does', (method, path) => {
    const tag = path.startsWith('/admin/webhook-deliveries')
      ? 'webhook deliveries'
      : path.startsWith('/admin/outbox')
        ? 'outbox'
        : path.startsWith('/admin/reconciliation') || path.startsWith('/admin/backfill') || path.startsWith('/admin/payments')
          ? 'reconciliation'
          : path.startsWith('/admin/retention')
            ? 'retention'
            : path.startsWith('/admin/endpoints')
              ? 'endpoints'
              : path.split('/')[1];
    expect(doc.paths[path][method].tags).toEqual([tag]);
  });

  it.each(OPERATION_IDS)('%s %s has the operationId %s and a summary', (method, path, operationId) => {
    const op = doc.paths[path][method];
    expect(op.operationId).toBe(operationId);
    expect(op.summary).toEqual(expect.stringMatching(/\S/));
  });

  it.each(CONFLICTS)('%s %s documents its own 409 example', (method, path, example) => {
    const examples = examplesOf(doc.paths[path][method].responses['409']?.content?.['application/json']);
    expect(examples).toEqual([example]);
  });

  it('every route that documents a 409 is one of those', () => {
    const with409 = operationsOf(doc).filter(({ op }) => op.responses['409']).map(({ method, path }) => `${method} ${path}`);
    expect(with409.sort()).toEqual(CONFLICTS.map(([m, p]) => `${m} ${p}`).sort());
  });

  it('the cancel route 409 says "a paid order cannot be canceled", and no other route borrows it', () => {
    expect(examplesOf(doc.paths['/orders/{id}/cancel'].post.responses['409'].content?.['application/json'])).toEqual([
      { error: 'illegal_transition', detail: 'a paid order cannot be canceled' },
    ]);
    const borrowers = operationsOf(doc)
      .filter(({ path }) => path !== '/orders/{id}/cancel')
      .filter(({ op }) => JSON.stringify(op.responses).includes('cannot be canceled'))
      .map(({ method, path }) => `${method} ${path}`);
    expect(borrowers).toEqual([]);
  });

  it("the archive's 400 example names a field of the archive's query", () => {
    const op = doc.paths['/admin/webhook-deliveries'].get;
    const query = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
    const [example] = examplesOf(op.responses['400'].content?.['application/json']) as Array<{ details: Array<{ field: string }> }>;
    expect(example.details.map((d) => d.field)).toEqual(['from']);
    expect(query).toContain('from');
  });

  it.each(CONTRACT_ROUTES.filter(([m, p]) => !OPEN_ROUTES.has(`${m} ${p}`)))(
    '%s %s: a 400 example names a field of its own query or body',
    (method, path) => {
      const op = doc.paths[path][method];
      const inputs = [...(op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name), ...bodyProperties(doc, op)];
      const examples = examplesOf(op.responses['400']?.content?.['application/json']) as Array<{ details?: Array<{ field: string }> }>;
      // A route without a query or a body validates nothing of its own, and documents no 400.
      expect({ inputs, documents400: examples.length > 0 }).toEqual({ inputs, documents400: inputs.length > 0 });
      for (const example of examples) {
        for (const { field } of example.details ?? []) expect(inputs).toContain(field.split(/[.[]/)[0]);
      }
    },
  );

  it.each(CONTRACT_ROUTES.filter(([m, p]) => !HEALTH.has(`${m} ${p}`)))(
    '%s %s documents its 4xx answers, each with an example body carrying an "error" code',
    (method, path) => {
      const op = doc.paths[path][method];
      const errors = Object.keys(op.responses).filter((s) => /^4\d\d$/.test(s));
      expect(errors.length).toBeGreaterThan(0);
      for (const status of errors) {
        const examples = examplesOf(op.responses[status].content?.['application/json']);
        expect({ status, examples: examples.length > 0 }).toEqual({ status, examples: true });
        for (const example of examples) {
          expect({ status, error: (example as { error?: unknown }).error }).toEqual({
            status,
            error: expect.stringMatching(/^[a-z_]+$/),
          });
        }
      }
    },
  );

  it.each(ADMIN_ROUTES)('%s %s documents 401 unauthorized and 503 admin_disabled', (method, path) => {
    const op = doc.paths[path][method];
    expect(examplesOf(op.responses['401']?.content?.['application/json'])).toContainEqual({ error: 'unauthorized' });
    expect(examplesOf(op.responses['503']?.content?.['application/json'])).toContainEqual({ error: 'admin_disabled' });
  });

  it('the webhook route documents the receive answers of CONTRACT §2', () => {
    const op = doc.paths['/webhooks/{endpointId}'].post;
    // 429: an unsigned hint from an address that named too many payments the provider does not have.
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '401', '404', '413', '429', '503']);
    const codes = (s: string) => examplesOf(op.responses[s].content?.['application/json']).map((e) => (e as { error?: string }).error);
    expect(codes('404')).toContain('unknown_endpoint');
    expect(codes('413')).toContain('payload_too_large');
    expect(codes('400')).toContain('malformed_payload');
    expect(codes('503')).toContain('unavailable');
    expect(codes('429')).toContain('rate_limited');
  });

  it('/health/ready documents its 503', () => {
    expect(Object.keys(doc.paths['/health/ready'].get.responses).sort()).toEqual(['200', '503']);
  });

  it('/metrics documents the Prometheus text answer', () => {
    expect(Object.keys(doc.paths['/metrics'].get.responses['200'].content ?? {})).toContain('text/plain');
  });

  it.each(['CreateOrderDto', 'RegisterPaymentDto', 'OrderView', 'PaymentView', 'DeliveryView', 'DeliveryDetail', 'ReconciliationRequest', 'ReprocessRequest', 'ReprocessAnswer'])(
    'schema %s exists, with examples',
    (name) => {
      expect(Object.keys(doc.components.schemas ?? {})).toContain(name);
      expect(Object.keys(schemaExamples(doc, name)).length).toBeGreaterThan(0);
    },
  );

  it('the request bodies point at their DTOs', () => {
    const ref = (path: string, method: string) => doc.paths[path][method].requestBody?.content?.['application/json']?.schema?.$ref;
    expect(ref('/orders', 'post')).toBe('#/components/schemas/CreateOrderDto');
    expect(ref('/orders/{id}/payments', 'post')).toBe('#/components/schemas/RegisterPaymentDto');
    expect(ref('/admin/reconciliation', 'post')).toBe('#/components/schemas/ReconciliationRequest');
    expect(ref('/admin/webhook-deliveries/reprocess', 'post')).toBe('#/components/schemas/ReprocessRequest');
  });

  it('the bulk reprocess documents its body (ids or filter), its bounds, and its answer {"queued": n}', () => {
    const schemas = doc.components.schemas!;
    expect(Object.keys(schemas.ReprocessRequest.properties).sort()).toEqual(['filter', 'ids']);
    expect(schemas.ReprocessRequest.required ?? []).toEqual([]);
    expect(schemas.ReprocessRequest.properties.ids).toMatchObject({ type: 'array', maxItems: 1000 });
    expect(Object.keys(schemas.ReprocessFilter.properties).sort()).toEqual(['endpointId', 'eventType', 'from', 'provider', 'status', 'to']);
    const op = doc.paths['/admin/webhook-deliveries/reprocess'].post;
    expect(Object.keys(op.responses).sort()).toEqual(['202', '400', '401', '415', '503']);
    expect(op.responses['202'].content?.['application/json']?.schema?.$ref).toBe('#/components/schemas/ReprocessAnswer');
    expect(schemas.ReprocessAnswer.properties.queued).toMatchObject({ type: 'integer', minimum: 0 });
    const [example] = examplesOf(op.responses['400'].content?.['application/json']) as Array<{ details: Array<{ field: string }> }>;
    expect(example.details.map((d) => d.field)).toEqual(['filter']);
  });

  it('CreateOrderDto documents the required fields of CONTRACT §3 with examples', () => {
    const schema = doc.components.schemas!.CreateOrderDto;
    expect([...schema.required].sort()).toEqual(['amount', 'currency', 'items', 'shipTo']);
    expect(schemaExamples(doc, 'CreateOrderDto')).toMatchObject({ amount: expect.any(String), currency: expect.any(String) });
  });

  it('the Idempotency-Key header of POST /orders is documented once, and optional', () => {
    const headers = (doc.paths['/orders'].post.parameters ?? []).filter((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
    expect(headers.map((h) => ({ name: h.name.toLowerCase(), required: h.required ?? false }))).toEqual([
      { name: 'idempotency-key', required: false },
    ]);
  });
  // Issue 22: exact schemas, and examples that work on every Execute of the Swagger UI.
  it('limit is an integer from 1 to 100 on every list, and no count is a bare number', () => {
    const limits = operationsOf(doc).flatMap(({ op }) => (op.parameters ?? []).filter((p) => p.name === 'limit'));
    expect(limits.length).toBe(5);
    for (const limit of limits) expect((limit as { schema?: unknown }).schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
    const numbers: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas ?? {})) {
      for (const [prop, def] of Object.entries<Record<string, any>>(schema.properties ?? {})) if (def.type === 'number') numbers.push(`${name}.${prop}`);
    }
    expect(numbers).toEqual([]);
    expect(doc.components.schemas!.DeliveryView.properties.attempts.type).toBe('integer');
    expect(doc.components.schemas!.OrderItemDto.properties.quantity.type).toBe('integer');
  });

  it('every nullable string of a view has an example of its own (never the generic "string")', () => {
    const missing: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas ?? {})) {
      for (const [prop, def] of Object.entries<Record<string, any>>(schema.properties ?? {})) {
        if (def.type === 'string' && def.nullable && def.example === undefined) missing.push(`${name}.${prop}`);
      }
    }
    expect(missing).toEqual([]);
    const delivery = doc.components.schemas!.DeliveryView.properties;
    for (const prop of ['deliveryId', 'lastError', 'processedAt']) expect({ prop, nullable: delivery[prop].nullable }).toEqual({ prop, nullable: true });
    for (const page of ['OrderPage', 'PaymentPage', 'DeliveryPage', 'OutboxPage']) {
      expect(doc.components.schemas![page].properties.nextCursor).toMatchObject({ type: 'string', nullable: true, example: null });
    }
  });

  it('statuses are enums, and a delivery outcome is one of the closed outcomes or (failed) an error code', () => {
    const props = (name: string) => doc.components.schemas![name].properties;
    for (const [name, prop] of [['OrderView', 'status'], ['PaymentView', 'status'], ['FulfillmentSummary', 'status'], ['DeliveryView', 'status'], ['OutboxView', 'status'], ['BackfillView', 'status'], ['QueuedAnswer', 'status']]) {
      expect({ name, prop, enum: Array.isArray(props(name)[prop].enum) }).toEqual({ name, prop, enum: true });
      expect(props(name)[prop].enum).toContain(props(name)[prop].example ?? props(name)[prop].enum[0]);
    }
    const [closed, open] = props('DeliveryView').outcome.anyOf;
    expect(closed.enum).toEqual(expect.arrayContaining(['applied', 'already_applied', 'stale', 'no_handler', 'payment_not_found', 'amount_mismatch']));
    expect(open).toMatchObject({ type: 'string', nullable: true, pattern: expect.any(String) });
  });

  it('no query parameter has an example: Try it out would send it as a filter', () => {
    const withExample = operationsOf(doc).flatMap(({ method, path, op }) =>
      (op.parameters ?? [])
        .filter((p) => p.in === 'query')
        .filter((p) => (p as { example?: unknown }).example !== undefined || (p as { schema?: { example?: unknown } }).schema?.example !== undefined)
        .map((p) => `${method} ${path} ${p.name}`),
    );
    expect(withExample).toEqual([]);
  });

  it("the archive's example is one Stripe delivery: provider, endpoint, account and event agree", () => {
    const view = schemaExamples(doc, 'DeliveryView');
    expect(view).toMatchObject({ provider: 'stripe', endpointId: 'stripe-main', merchantAccountId: 'acct_demo', eventType: expect.stringMatching(/^payment_intent\./) });
    const detail = schemaExamples(doc, 'DeliveryDetail');
    expect(detail.body).toMatchObject({ id: view.eventId, type: view.eventType, account: view.merchantAccountId, data: { object: { id: view.resourceId } } });
  });

  it('POST /orders: the example body holds no unique field, and is accepted twice (201, 201)', async () => {
    const examples = doc.paths['/orders'].post.requestBody?.content?.['application/json']?.examples ?? {};
    const values = Object.values(examples).map((e) => e.value as Record<string, unknown>);
    expect(values).toHaveLength(1);
    expect(values[0]).not.toHaveProperty('reference');
    for (let i = 0; i < 2; i++) {
      const res = await request(t.app.getHttpServer()).post('/orders').set(AUTH).send(values[0]);
      expect(res.status).toBe(201);
    }
  });
});
