// Creates the database named in a PostgreSQL URL when it does not exist yet.
const { Client } = require('pg');

async function main() {
  const target = new URL(process.argv[2]);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[A-Za-z0-9_-]{1,63}$/.test(name)) throw new Error(`unexpected database name in the URL`);
  const admin = new URL(target);
  admin.pathname = '/postgres';
  let client;
  for (let attempt = 1; ; attempt++) {
    client = new Client({ connectionString: admin.toString() });
    try {
      await client.connect();
      break;
    } catch (err) {
      // A server that has just started may refuse connections for a moment.
      if (attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      await client.query(`CREATE DATABASE "${name}"`).catch((err) => {
        if (err.code !== '42P04') throw err; // created meanwhile
      });
      console.error(`created database ${name}`);
    }
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  console.error(`error: cannot prepare the database: ${err.message}`);
  process.exit(1);
});
