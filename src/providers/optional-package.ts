/**
 * An optional peer package (a provider's official client), required the first time it is asked for
 * and never again: the package, or null when it is not installed, so that a host with no endpoint
 * of its provider never needs it. Any other failure to load it is thrown as it is.
 */
export function optionalPackage<T>(load: () => T): () => T | null {
  let loaded: { pkg: T } | { missing: true } | undefined;
  return () => {
    if (loaded === undefined) {
      try {
        loaded = { pkg: load() };
      } catch (err) {
        if ((err as { code?: unknown } | null)?.code !== 'MODULE_NOT_FOUND') throw err;
        loaded = { missing: true };
      }
    }
    return 'pkg' in loaded ? loaded.pkg : null;
  };
}
