import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The contract's signature vectors and example bodies, kept in the repository (test/fixtures) so a
 * clone alone runs every test; test/fixtures/fixtures-copy.spec.ts keeps them equal to the originals.
 */
export const FIXTURES_DIR = join(__dirname, '..', 'fixtures');

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
  return JSON.parse(readFileSync(join(FIXTURES_DIR, 'vectors', 'signatures.json'), 'utf8')).vectors;
}

/** Example bodies per provider and event type (CONTRACT §2). */
export function exampleEvents(provider: string): Record<string, Record<string, unknown>> {
  return JSON.parse(readFileSync(join(FIXTURES_DIR, 'examples', `${provider}.json`), 'utf8')).events;
}
