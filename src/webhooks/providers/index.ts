import type { ProviderName } from '../../config/options';
import { factuareaProvider } from './factuarea.provider';
import { paymosProvider } from './paymos.provider';
import type { ProviderAdapter } from './provider';
import { standardProvider } from './standard.provider';
import { stripeProvider } from './stripe.provider';

export const PROVIDERS: Readonly<Record<ProviderName, ProviderAdapter>> = {
  paymos: paymosProvider,
  factuarea: factuareaProvider,
  stripe: stripeProvider,
  standard: standardProvider,
};

export * from './provider';
