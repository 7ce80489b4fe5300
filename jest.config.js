/** One run for every tier: unit specs beside the code, integration and e2e suites in test/. */
const swc = {
  sourceMaps: 'inline',
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
    target: 'es2022',
  },
  module: { type: 'commonjs' },
};

module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts', '<rootDir>/test/**/*.int-spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: { '^.+\\.(t|j|mj)s$': ['@swc/jest', swc] },
  // Nest 12 packages are ESM-only; Jest on Node 20 needs them transpiled.
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|@noble|checkout-sdk-node|cookie|light-my-request/node_modules/cookie|content-disposition|@fastify/static/node_modules/content-disposition)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  testSequencer: '<rootDir>/test/support/sequencer.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30_000,
  maxWorkers: 1,
  // A handle left open by a suite whose teardown timed out (seen once: the proxy suites of
  // metrics-health under a loaded machine) must fail that suite, not hang the run past CI's bound.
  forceExit: true,
};
