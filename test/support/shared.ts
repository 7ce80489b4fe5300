import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** `../shared` beside the checkout: the contract, its signature vectors and example bodies. */
export const SHARED_DIR = join(__dirname, '..', '..', '..', 'shared');

export interface SignatureVector {
  provider: 'paymos' | 'factuarea' | 'stripe' | 'standard';
  case: string;
  secrets: string[];
  now: number;
  toleranceSeconds?: number;
  body: string;
  headers: Record<string, string>;
  expect: 'valid' | 'missing_signature' | 'invalid_signature' | 'timestamp_out_of_tolerance';
}

export function signatureVectors(): SignatureVector[] {
  return JSON.parse(readFileSync(join(SHARED_DIR, 'spec', 'vectors', 'signatures.json'), 'utf8')).vectors;
}

/** Example bodies per provider and event type (CONTRACT §2). */
export function exampleEvents(provider: string): Record<string, Record<string, unknown>> {
  return JSON.parse(readFileSync(join(SHARED_DIR, 'spec', 'examples', `${provider}.json`), 'utf8')).events;
}
