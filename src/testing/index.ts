/**
 * Helpers for a host's own tests (`nestjs-payment-webhooks/testing`): sign a body the way each
 * provider does, to play the sender against the module.
 */
export { signedHeaders } from './sign';
export type { SigningProvider, SignOptions } from './sign';
