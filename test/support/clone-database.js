// Run as a child process by env.ts: `node clone-database.js <adminUrl> <template> <name>`.
// Creates <name> as a copy of the migrated <template>; a copy takes a fraction of a second.
const { Client } = require('pg');

async function main() {
  const [adminUrl, template, name] = process.argv.slice(2);
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  } finally {
    await admin.end();
  }
}

main().catch((error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
