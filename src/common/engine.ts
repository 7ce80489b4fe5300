/** The Node.js majors this package supports (package.json `engines`: `>=22`). */
export const SUPPORTED_NODE_MAJOR = 22;

/**
 * One line saying what to install when this Node.js is older than the package supports (Node 20
 * reached its end of life on 2026-04-30), or null. The module still starts: the line is a warning.
 */
export function unsupportedNode(version: string = process.versions.node): string | null {
  const major = Number(version.split('.')[0]);
  if (!Number.isInteger(major) || major >= SUPPORTED_NODE_MAJOR) return null;
  return `Node.js ${version} is older than nestjs-payment-webhooks supports (>= ${SUPPORTED_NODE_MAJOR}): install Node.js 22 or 24 LTS (https://nodejs.org/en/download)`;
}
