import { CanActivate } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import request from 'supertest';
import { signedHeaders } from '../../src/testing/sign';
import { ADMIN_TOKEN, AUTH, createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';

/**
 * The Swagger UI as an operator uses it, in a real headless browser (Debian's Chromium, driven by
 * playwright-core): one login (the browser's Basic prompt, the token as password), then list the
 * orders, create two from the example, and read an archived delivery, each Execute answered by the
 * API itself, on Express and on Fastify. The screenshots are kept in reports/screenshots/
 * (`<platform>-NN-<step>.png`), the run's artefacts.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOTS = join(__dirname, '..', '..', 'reports', 'screenshots');
/** What a step may take in the browser; nothing waits a fixed time. */
const STEP_MS = 15_000;

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Records a signed Paymos delivery through the webhook route; returns its archive id. */
async function recordDelivery(t: TestApp, eventId: string): Promise<string> {
  const body = JSON.stringify({ event_id: eventId, type: 'invoice.updated', data: { object: 'invoice', id: 'inv_swagger_ui' } });
  const res = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(signedHeaders('paymos', secretOf('paymos-a'), body, { eventId })).send(body);
  expect(res.status).toBe(200);
  const list = await request(t.app.getHttpServer()).get('/admin/webhook-deliveries').query({ eventId }).set(AUTH);
  expect(list.status).toBe(200);
  expect(list.body.items).toHaveLength(1);
  return list.body.items[0].id;
}

/** An operation of the UI by its operationId (its element id is `operations-<tag>-<operationId>`). */
function operation(page: Page, operationId: string): Locator {
  return page.locator(`.opblock[id$="-${operationId}"]`);
}

/** Expands an operation and turns on Try it out. */
async function tryItOut(op: Locator): Promise<void> {
  await op.locator('.opblock-summary').first().click();
  await op.locator('button.try-out__btn').click({ timeout: STEP_MS });
  await op.locator('button.execute').waitFor({ timeout: STEP_MS });
}

/**
 * Presses Execute and waits for the UI to show the API's answer to that very request: the status
 * the UI shows, the status the browser received, and the Authorization header it sent.
 */
async function execute(page: Page, op: Locator, matches: (url: URL, method: string) => boolean) {
  const answer = page.waitForResponse((r) => matches(new URL(r.url()), r.request().method()), { timeout: STEP_MS });
  await op.locator('button.execute').click();
  const response = await answer;
  const text = await response.text();
  const shown = op.locator('.live-responses-table .response .response-col_status').first();
  await shown.waitFor({ timeout: STEP_MS });
  // The UI shows the body of this answer (not a previous one's) before its status is read.
  const body: Record<string, unknown> = text ? JSON.parse(text) : {};
  if (typeof body.id === 'string') await op.locator('.live-responses-table .response-col_description').filter({ hasText: body.id }).waitFor({ timeout: STEP_MS });
  return {
    shownStatus: (await shown.innerText()).trim(),
    status: response.status(),
    authorization: await response.request().headerValue('authorization'),
    body,
  };
}

/**
 * A screenshot of an operation from its summary to the answer the UI shows (the parameters, the
 * body sent, the curl line, the status and body received), not the static documentation below.
 */
async function shot(page: Page, op: Locator, name: string): Promise<void> {
  await op.scrollIntoViewIfNeeded();
  const top = await op.boundingBox();
  const answer = await op.locator('.live-responses-table').first().boundingBox();
  if (!top || !answer) throw new Error(`${name}: nothing to photograph`);
  const scroll = await page.evaluate<{ x: number; y: number }>('({ x: window.scrollX, y: window.scrollY })');
  await page.screenshot({
    path: join(SCREENSHOTS, name),
    fullPage: true,
    clip: { x: top.x + scroll.x, y: top.y + scroll.y, width: top.width, height: answer.y + answer.height - top.y },
  });
}

describe.each(PLATFORMS)('%s: the Swagger UI in a real browser: one login, then list orders, create two, read the archive', (platform) => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let deliveryId: string;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    t = await createTestApp({}, { platform });
    await truncateAll(t.dataSource);
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    deliveryId = await recordDelivery(t, 'evt_swagger_ui_1');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('logs in once (Basic), and every Execute is authorized with the same token as bearer', async () => {
    // httpCredentials answers the Basic challenge of /docs, as the operator answers the login box.
    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: ADMIN_TOKEN }, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      const docs = await page.goto(`${base}/docs`);
      expect(docs?.status()).toBe(200);
      // The page says how it authorizes, above the first tag.
      await page.locator('.information-container').getByText('Sending requests from this page').waitFor({ timeout: STEP_MS });
      // Authorized with the login's token, without the Authorize dialog: the lock is closed.
      await page.locator('.auth-wrapper button.authorize.locked').waitFor({ timeout: STEP_MS });
      await page.screenshot({ path: join(SCREENSHOTS, `${platform}-01-logged-in-authorized.png`) });
      // The Authorize dialog says the bearer scheme is authorized (the value is not shown).
      await page.locator('.auth-wrapper button.authorize').click();
      const dialog = page.locator('.dialog-ux .modal-ux');
      await dialog.getByText('Authorized').first().waitFor({ timeout: STEP_MS });
      expect(await dialog.innerText()).not.toContain(ADMIN_TOKEN);
      await dialog.screenshot({ path: join(SCREENSHOTS, `${platform}-01b-authorize-dialog-authorized.png`) });
      await dialog.locator('button.close-modal').click();
      await dialog.waitFor({ state: 'detached', timeout: STEP_MS });

      // GET /orders: Try it out, Execute: 200.
      const list = operation(page, 'listOrders');
      await tryItOut(list);
      const listed = await execute(page, list, (u, m) => m === 'GET' && u.pathname === '/orders');
      expect({ shown: listed.shownStatus, status: listed.status, authorization: listed.authorization }).toEqual({
        shown: '200',
        status: 200,
        authorization: `Bearer ${ADMIN_TOKEN}`,
      });
      await shot(page, list, `${platform}-02-list-orders-200.png`);
      await list.locator('.opblock-summary').first().click();

      // POST /orders: the example as it is, twice: 201 both times, two orders.
      const create = operation(page, 'createOrder');
      await tryItOut(create);
      const isCreate = (u: URL, m: string) => m === 'POST' && u.pathname === '/orders';
      const first = await execute(page, create, isCreate);
      expect({ shown: first.shownStatus, status: first.status, authorization: first.authorization }).toEqual({
        shown: '201',
        status: 201,
        authorization: `Bearer ${ADMIN_TOKEN}`,
      });
      await shot(page, create, `${platform}-03-create-order-first-201.png`);
      const second = await execute(page, create, isCreate);
      expect({ shown: second.shownStatus, status: second.status }).toEqual({ shown: '201', status: 201 });
      expect(second.body.id).not.toBe(first.body.id);
      await shot(page, create, `${platform}-04-create-order-second-201.png`);
      await create.locator('.opblock-summary').first().click();
      const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM orders`);
      expect(n).toBe(2);

      // GET /admin/webhook-deliveries/{id}: the delivery recorded before, 200 with its body.
      const read = operation(page, 'getWebhookDelivery');
      await tryItOut(read);
      await read.locator('tr[data-param-name="id"] input').fill(deliveryId);
      const archived = await execute(page, read, (u, m) => m === 'GET' && u.pathname === `/admin/webhook-deliveries/${deliveryId}`);
      expect({ shown: archived.shownStatus, status: archived.status, authorization: archived.authorization }).toEqual({
        shown: '200',
        status: 200,
        authorization: `Bearer ${ADMIN_TOKEN}`,
      });
      expect(archived.body).toMatchObject({ id: deliveryId, eventId: 'evt_swagger_ui_1', endpointId: 'paymos-a' });
      await read.locator('.live-responses-table .response-col_description').filter({ hasText: 'evt_swagger_ui_1' }).waitFor({ timeout: STEP_MS });
      await shot(page, read, `${platform}-05-archived-delivery-200.png`);
    } finally {
      await context.close();
    }
  }, 120_000);
});

describe.each(PLATFORMS)('%s: the token the Swagger UI sends is the one its page was opened with', (platform) => {
  let t: TestApp;
  let hosted: TestApp;
  beforeAll(async () => {
    t = await createTestApp({}, { platform });
    const hostGuard: CanActivate = { canActivate: (ctx) => ctx.switchToHttp().getRequest().headers['x-host-user'] === 'ops' };
    hosted = await createTestApp({ adminGuard: hostGuard }, { platform });
  });
  afterAll(async () => {
    await t?.close();
    await hosted?.close();
  });

  it('GET /docs/login-token with the Basic login: the token, never stored', async () => {
    for (const headers of [{ Authorization: basic('operator', ADMIN_TOKEN) }, { Authorization: basic('', ADMIN_TOKEN), 'Sec-Fetch-Site': 'same-origin' }]) {
      const res = await request(t.app.getHttpServer()).get('/docs/login-token').set(headers);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ token: ADMIN_TOKEN });
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('refuses every request from another site (Sec-Fetch-Site), even with the login', async () => {
    for (const site of ['cross-site', 'same-site', 'none']) {
      const res = await request(t.app.getHttpServer()).get('/docs/login-token').set({ Authorization: basic('operator', ADMIN_TOKEN), 'Sec-Fetch-Site': site });
      expect({ site, status: res.status, body: res.body }).toEqual({ site, status: 403, body: { error: 'forbidden' } });
      expect(JSON.stringify(res.body)).not.toContain(ADMIN_TOKEN);
    }
  });

  it('a browser without Fetch Metadata still names its origin: another one is refused, and the answer is never shared with another origin', async () => {
    const server = t.app.getHttpServer();
    const evil = await request(server)
      .get('/docs/login-token')
      .set({ Authorization: basic('operator', ADMIN_TOKEN), Origin: 'https://evil.example' });
    expect({ status: evil.status, body: evil.body }).toEqual({ status: 403, body: { error: 'forbidden' } });
    expect(evil.headers['access-control-allow-origin']).toBeUndefined();
    expect(evil.headers['cross-origin-resource-policy']).toBe('same-origin');
    // Its own origin (any scheme: behind a TLS proxy the app sees http) is answered.
    const same = await request(server)
      .get('/docs/login-token')
      .set({ Authorization: basic('operator', ADMIN_TOKEN), Host: 'payments.example', Origin: 'https://payments.example' });
    expect(same.status).toBe(200);
    expect(same.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('is behind the docs check: no or a wrong login answers 401 with the Basic challenge', async () => {
    for (const headers of [{}, { Authorization: basic('operator', 'nope') }, { Authorization: 'Bearer nope' }]) {
      const res = await request(t.app.getHttpServer()).get('/docs/login-token').set(headers);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
      expect(res.headers['www-authenticate']).toMatch(/^Basic/);
    }
  });

  it('the API still refuses the Basic login: only the bearer opens it', async () => {
    const res = await request(t.app.getHttpServer()).get('/orders').set({ Authorization: basic('operator', ADMIN_TOKEN) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized' });
  });

  it('the scripts of the page hold no token: the init script asks for it, same-origin', async () => {
    const init = await request(t.app.getHttpServer()).get('/docs/swagger-ui-init.js').set({ Authorization: basic('operator', ADMIN_TOKEN) });
    expect(init.status).toBe(200);
    expect(init.text).not.toContain(ADMIN_TOKEN);
    expect(init.text).toContain("preauthorizeApiKey('admin'");
    expect(init.text).toContain("credentials: 'same-origin'");
  });

  it("under a host's own guard there is no token to give: 404, and Authorize is the way", async () => {
    const res = await request(hosted.app.getHttpServer()).get('/docs/login-token').set('x-host-user', 'ops');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found' });
    const refused = await request(hosted.app.getHttpServer()).get('/docs/login-token').set(AUTH);
    expect(refused.status).toBe(403);
  });
});
