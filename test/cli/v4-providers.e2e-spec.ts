import { describeV4Providers } from './v4-providers.shared';

// conformance for paypal, checkout, square and paddle on Express, with the simulate runs and the failing cases.
describeV4Providers('express', true);
