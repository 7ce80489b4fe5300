import type { DataSource } from 'typeorm';

/**
 * Which database the module runs on, as every process of one deployment sees it: the server (its
 * system identifier, the same through any address, proxy or failover to a physical replica; its
 * address and port where that cannot be read), the database and the module's schema. The
 * description shows the database as the URL names its host, never a credential.
 */
export async function deploymentIdentity(dataSource: DataSource, databaseUrl: string, schema: string): Promise<{ id: string; description: string }> {
  const [row] = (await dataSource.query(`SELECT current_database() AS db, host(inet_server_addr()) AS addr, inet_server_port() AS port`)) as Array<{
    db: string;
    addr: string | null;
    port: number | null;
  }>;
  let server: string | null = null;
  try {
    const [control] = (await dataSource.query(`SELECT system_identifier::text AS id FROM pg_control_system()`)) as Array<{ id: string | null }>;
    server = control?.id ? `pg:${control.id}` : null;
  } catch {
    // not readable here: the server's address instead
  }
  const address = row.addr === null ? `a local socket` : `${row.addr.includes(':') ? `[${row.addr}]` : row.addr}:${row.port}`;
  // Without the system identifier the server is left out: an address differs by route (a pooler,
  // a socket, a failover address), and one deployment must never refuse its own processes.
  return {
    id: server === null ? `${row.db}/${schema}` : `${server}/${row.db}/${schema}`,
    description: `database "${row.db}", schema "${schema}", on ${urlHost(databaseUrl) ?? address}`,
  };
}

/** `db.internal:5432` of a PostgreSQL URL (never its user or password), or null. */
function urlHost(databaseUrl: string): string | null {
  try {
    const url = new URL(databaseUrl);
    if (!url.hostname) return null;
    return url.port ? `${url.hostname}:${url.port}` : `${url.hostname}:5432`;
  } catch {
    return null;
  }
}
