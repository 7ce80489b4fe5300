// Rewrites package.json and package-lock.json in the current folder for the standalone service's
// runtime (the Docker image): the framework packages, peers of the package for a host, become
// dependencies of the service at the versions the lock holds, and dev dependencies go. Then
// `npm ci --omit=dev` installs exactly the locked tree the tests ran against, without the dev tools.
// Usage (in a copy of package.json + package-lock.json): node runtime-manifest.js
const { readFileSync, writeFileSync } = require('node:fs');

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const root = lock.packages[''];
const dependencies = { ...pkg.dependencies };
for (const name of Object.keys(pkg.peerDependencies ?? {})) {
  const spec = pkg.devDependencies?.[name];
  if (!spec) throw new Error(`peer ${name} has no dev dependency to take its locked version from`);
  dependencies[name] = spec;
}
pkg.dependencies = dependencies;
root.dependencies = dependencies;
delete pkg.peerDependencies;
delete pkg.peerDependenciesMeta;
delete root.peerDependencies;
delete root.peerDependenciesMeta;
delete pkg.devDependencies;
delete root.devDependencies;
writeFileSync('package.json', `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
