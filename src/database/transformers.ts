import type { ValueTransformer } from 'typeorm';

/** PostgreSQL `bigint` comes back from `pg` as a string; money needs it exact, as a bigint. */
export const bigintTransformer: ValueTransformer = {
  to: (value: bigint | null | undefined) => (value === null || value === undefined ? value : value.toString()),
  from: (value: string | null) => (value === null ? null : BigInt(value)),
};
