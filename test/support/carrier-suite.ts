import type { PaymentWebhooksOptions } from '../../src/config/options';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { createTestApp, Platform, TestApp, truncateAll } from './app';

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100 };

/**
 * Registers a suite's set-up around the carrier simulator: the simulator started, a test app with
 * workers on whose carriers (given the simulator's URL) `options` names (fast retries and sweeps by
 * default), empty tables and a reset simulator before each test; everything closed after. `ready` gets the app once it runs.
 */
export function useCarrierSimulator(
  sim: CarrierSimulator,
  options: (carrierUrl: string) => Partial<PaymentWebhooksOptions>,
  ready: (t: TestApp) => void,
  { platform = 'express' }: { platform?: Platform } = {},
): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    await sim.start();
    const chosen = options(sim.url);
    // Fast carrier retries and outbox sweeps unless the suite says otherwise.
    app = await createTestApp({ runWorkers: true, ...chosen, tuning: { ...FAST, ...chosen.tuning } }, { platform });
    ready(app);
  });
  afterAll(async () => {
    await app?.close();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(app!.dataSource);
    sim.reset();
  });
}
