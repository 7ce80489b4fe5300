import request from 'supertest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { AUTH, createTestApp, TestApp } from '../support/app';

/**
 * CONTRACT §4: `/docs-json` is a valid OpenAPI 3 document of every route of the contract, with
 * its security and its error answers.
 */

type Operation = {
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description?: string; content?: Record<string, MediaType> }>;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { content?: Record<string, MediaType> };
};
type MediaType = { schema?: Record<string, any>; example?: unknown; examples?: Record<string, { value?: unknown }> };
type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes?: Record<string, Record<string, unknown>>; schemas?: Record<string, Record<string, any>> };
  security?: unknown;
};

/** Every route of CONTRACT §2–§4, as OpenAPI spells its path. */
const CONTRACT_ROUTES: Array<[string, string]> = [
  ['post', '/webhooks/{endpointId}'],
  ['post', '/orders'],
  ['get', '/orders'],
  ['get', '/orders/{id}'],
  ['post', '/orders/{id}/payments'],
  ['post', '/orders/{id}/mark-paid'],
  ['post', '/orders/{id}/cancel'],
  ['get', '/payments'],
  ['get', '/payments/{id}'],
  ['get', '/admin/webhook-deliveries'],
  ['get', '/admin/webhook-deliveries/{id}'],
  ['post', '/admin/webhook-deliveries/{id}/reprocess'],
  ['get', '/admin/outbox'],
  ['post', '/admin/outbox/{id}/retry'],
  ['post', '/admin/reconciliation'],
  ['post', '/admin/retention/purge'],
  ['get', '/health'],
  ['get', '/health/ready'],
  ['get', '/metrics'],
];

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
 * `SwaggerParser.validate(structuredClone(doc))` with the installed @apidevtools/swagger-parser.
 * It runs in a plain Node process: its dependency json-schema-ref-parser is ESM-only, which Node
 * loads natively but Jest's module runtime (Node 20) refuses, and the Jest config is not ours to
 * change. The document travels as JSON, i.e. as a structured clone.
 */
function swaggerParserValidate(doc: unknown): Promise<{ valid: boolean; message?: string; title?: string }> {
  const script = `
    const SwaggerParser = require('@apidevtools/swagger-parser');
    let text = '';
    process.stdin.on('data', (c) => (text += c));
    process.stdin.on('end', () => {
      const doc = JSON.parse(text);
      SwaggerParser.validate(structuredClone(doc)).then(
        (api) => process.stdout.write(JSON.stringify({ valid: true, title: api.info.title })),
        (err) => process.stdout.write(JSON.stringify({ valid: false, message: String(err && err.message) })),
      );
    });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { cwd: join(__dirname, '..', '..'), stdio: ['pipe', 'pipe', 'pipe'] });
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
    child.stdin.end(JSON.stringify(doc));
  });
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

  it('declares the admin security schemes: bearer "admin" (and basic)', () => {
    const schemes = doc.components.securitySchemes ?? {};
    expect(schemes.admin).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.adminBasic).toMatchObject({ type: 'http', scheme: 'basic' });
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
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '401', '404', '413', '503']);
    const codes = (s: string) => examplesOf(op.responses[s].content?.['application/json']).map((e) => (e as { error?: string }).error);
    expect(codes('404')).toContain('unknown_endpoint');
    expect(codes('413')).toContain('payload_too_large');
    expect(codes('400')).toContain('malformed_payload');
    expect(codes('503')).toContain('unavailable');
  });

  it('/health/ready documents its 503', () => {
    expect(Object.keys(doc.paths['/health/ready'].get.responses).sort()).toEqual(['200', '503']);
  });

  it('/metrics documents the Prometheus text answer', () => {
    expect(Object.keys(doc.paths['/metrics'].get.responses['200'].content ?? {})).toContain('text/plain');
  });

  it.each(['CreateOrderDto', 'RegisterPaymentDto', 'OrderView', 'PaymentView', 'DeliveryView', 'DeliveryDetail', 'ReconciliationRequest'])(
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
});
