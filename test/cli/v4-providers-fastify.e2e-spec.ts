import { describeV4Providers } from './v4-providers.shared';

// conformance for paypal, checkout, square and paddle on Fastify.
describeV4Providers('fastify', false);
