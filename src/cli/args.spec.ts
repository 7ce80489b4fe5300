import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminTokenGiven, readAdminToken, readSecrets, requireOptions, SECRET_FILE_MAX_BYTES, secretsGiven } from './args';
import { CliExit, EXIT } from './context';

/**
 * How the commands that talk to a running service get the endpoint's secrets and the admin token
 * without them on the command line (every user of the machine sees it in `ps`): `--secret-file`,
 * ADMIN_TOKEN. Every refusal is exit 2 with one line, naming the option, path or line, never a value.
 */

const SECRET = 'whsec_T0pSecret';
const OLD = 'whsec_0ldSecret';

function exitOf(run: () => unknown): CliExit {
  try {
    run();
  } catch (err) {
    if (err instanceof CliExit) return err;
    throw err;
  }
  throw new Error('no CliExit');
}

/** A refusal: exit 2, exactly this one line, and none of the values given. */
function expectRefused(run: () => unknown, message: string, ...values: string[]): void {
  const e = exitOf(run);
  expect({ code: e.code, message: e.message }).toEqual({ code: EXIT.couldNotRun, message });
  for (const v of values) expect(e.message).not.toContain(v);
}

describe('readSecrets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pw-secrets-'));
  let n = 0;
  function file(content: string | Buffer): string {
    const path = join(dir, `secrets-${++n}`);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  }

  it('--secret: the values as given, in order (the first is the current one)', () => {
    expect(readSecrets('simulate', { secret: [SECRET, OLD] })).toEqual([SECRET, OLD]);
  });

  it('neither option: undefined (the caller says it is required, or goes without)', () => {
    expect(readSecrets('simulate', {})).toBeUndefined();
  });

  it('--secret-file with one secret and no final newline (a mounted Kubernetes or Docker secret)', () => {
    expect(readSecrets('conformance', { 'secret-file': [file(SECRET)] })).toEqual([SECRET]);
  });

  it('--secret-file with a rotation: one a line, in order; \\r\\n, surrounding spaces, a BOM, blank lines and # comments dropped', () => {
    const path = file(`\uFEFF# current, from 2026-12-01\r\n  ${SECRET}\t\r\n\r\n   \n# previous, remove once its index stops counting\n${OLD}  \n\n`);
    expect(readSecrets('conformance', { 'secret-file': [path] })).toEqual([SECRET, OLD]);
  });

  it('a # inside a secret is part of it; only a line that starts with # is a comment', () => {
    expect(readSecrets('conformance', { 'secret-file': [file('s3cr#t\n  # note\n')] })).toEqual(['s3cr#t']);
  });

  it('--secret-file from a pipe (`<(vault read …)`, /dev/stdin): read to its end', () => {
    const fifo = join(dir, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // The writer is another process: this one blocks in the read until it has written and closed.
    const writer = spawn('sh', ['-c', 'printf "%s\\n%s\\n" "$A" "$B" > "$F"'], { env: { A: SECRET, B: OLD, F: fifo, PATH: process.env.PATH } });
    expect(readSecrets('conformance', { 'secret-file': [fifo] })).toEqual([SECRET, OLD]);
    writer.kill();
  });

  it('both --secret and --secret-file: refused, not combined (a stale --secret beside the file would sign too)', () => {
    expectRefused(
      () => readSecrets('conformance', { secret: [OLD], 'secret-file': [file(SECRET)] }),
      'conformance: --secret and --secret-file together: give the secrets one way (--secret-file keeps them out of ps)',
      SECRET,
      OLD,
    );
  });

  it('--secret-file twice: refused, not the last one silently', () => {
    expectRefused(
      () => readSecrets('conformance', { 'secret-file': [file(SECRET), file(OLD)] }),
      'conformance: --secret-file given more than once: one file holds every secret, one a line',
      SECRET,
      OLD,
    );
  });

  it('an empty file, or one of blank lines and comments only: refused naming the path', () => {
    const empty = file('');
    expectRefused(() => readSecrets('simulate', { 'secret-file': [empty] }), `simulate: --secret-file "${empty}" holds no secret (one a line; blank lines and # comments are skipped)`);
    const blank = file('\r\n  \n# the secret goes here\n');
    expectRefused(() => readSecrets('simulate', { 'secret-file': [blank] }), `simulate: --secret-file "${blank}" holds no secret (one a line; blank lines and # comments are skipped)`);
  });

  it.each([
    ['no such file', () => join(dir, 'missing'), 'no such file'],
    ['a directory', () => dir, 'a directory'],
    ['a file under a file', () => join(file(SECRET), 'x'), 'a parent is not a directory'],
  ])('an unreadable path (%s): refused naming the path and why', (_name, pathOf, why) => {
    const path = pathOf();
    expectRefused(() => readSecrets('conformance', { 'secret-file': [path] }), `conformance: --secret-file "${path}": cannot read it (${why})`, SECRET);
  });

  const root = process.getuid?.() === 0;
  (root ? it.skip : it)('a file this user may not read: refused naming the path, never its content', () => {
    const path = file(SECRET);
    chmodSync(path, 0o000);
    expectRefused(() => readSecrets('conformance', { 'secret-file': [path] }), `conformance: --secret-file "${path}": cannot read it (permission denied)`, SECRET);
  });

  it('a line with a control character inside: refused by its line number, never its content', () => {
    const path = file(`${OLD}\nwhsec_a\u0000b\n`);
    expectRefused(() => readSecrets('simulate', { 'secret-file': [path] }), `simulate: --secret-file "${path}": line 2 must not contain control characters`, OLD, 'whsec_a');
    const tab = file(`whsec_with\ttab\n`);
    expectRefused(() => readSecrets('simulate', { 'secret-file': [tab] }), `simulate: --secret-file "${tab}": line 1 must not contain control characters`, 'whsec_with');
  });

  it('bytes that are not UTF-8: refused (a secret would otherwise be silently altered)', () => {
    const path = file(Buffer.from([0x77, 0x68, 0xff, 0xfe, 0x0a]));
    expectRefused(() => readSecrets('simulate', { 'secret-file': [path] }), `simulate: --secret-file "${path}" is not UTF-8 text`);
  });

  it('a file larger than 64 KiB (the wrong file, a device): refused without reading it whole', () => {
    const big = file(`${SECRET}\n`.repeat(Math.ceil((SECRET_FILE_MAX_BYTES + 1) / (SECRET.length + 1))));
    expectRefused(() => readSecrets('simulate', { 'secret-file': [big] }), `simulate: --secret-file "${big}" is larger than 64 KiB: not a file of secrets`, SECRET);
    expectRefused(() => readSecrets('simulate', { 'secret-file': ['/dev/zero'] }), 'simulate: --secret-file "/dev/zero" is larger than 64 KiB: not a file of secrets');
  });

  it('a path with a newline stays on one line in the message', () => {
    const e = exitOf(() => readSecrets('simulate', { 'secret-file': [join(dir, 'a\nb')] }));
    expect(e.message.split('\n')).toHaveLength(1);
    expect(e.message).toContain('a\\nb');
  });

  it('--secret: an empty one, or one with a control character, refused by name only', () => {
    expectRefused(() => readSecrets('simulate', { secret: [SECRET, ''] }), 'simulate: --secret must not be empty', SECRET);
    expectRefused(
      () => readSecrets('simulate', { secret: [`${SECRET}\n`] }),
      'simulate: --secret must not contain control characters (a trailing newline from a file?)',
      SECRET,
    );
  });
});

describe('readAdminToken', () => {
  const TOKEN = 'adm-T0ken-value';

  it('--admin-token wins over ADMIN_TOKEN', () => {
    expect(readAdminToken('conformance', TOKEN, { ADMIN_TOKEN: 'env-token' })).toBe(TOKEN);
  });

  it('absent: ADMIN_TOKEN from the environment', () => {
    expect(readAdminToken('conformance', undefined, { ADMIN_TOKEN: TOKEN })).toBe(TOKEN);
  });

  it('absent, and ADMIN_TOKEN unset or empty: no token (`ADMIN_TOKEN= …` runs without one)', () => {
    expect(readAdminToken('simulate', undefined, {})).toBeUndefined();
    expect(readAdminToken('simulate', undefined, { ADMIN_TOKEN: '' })).toBeUndefined();
  });

  it('an explicit empty --admin-token is refused (an unset variable), even with ADMIN_TOKEN set', () => {
    expectRefused(() => readAdminToken('simulate', '', { ADMIN_TOKEN: TOKEN }), 'simulate: --admin-token must not be empty', TOKEN);
  });

  it('a control character, in either: refused by name only', () => {
    expectRefused(
      () => readAdminToken('conformance', `${TOKEN}\n`, {}),
      'conformance: --admin-token must not contain control characters (a trailing newline from a file?)',
      TOKEN,
    );
    expectRefused(
      () => readAdminToken('conformance', undefined, { ADMIN_TOKEN: `${TOKEN}\r` }),
      'conformance: ADMIN_TOKEN must not contain control characters (a trailing newline from a file?)',
      TOKEN,
    );
  });
});

describe('requireOptions with the secrets and the token', () => {
  const USAGE = 'usage: payment-webhooks x …';
  const require = (values: Record<string, unknown>, env: { ADMIN_TOKEN?: string } = {}) =>
    requireOptions('x', USAGE, values, ['url', secretsGiven(values), adminTokenGiven(values['admin-token'] as string | undefined, env)]);

  it('each missing one named in one line, with where else it may come from; then the usage', () => {
    const e = exitOf(() => require({}));
    expect(e.code).toBe(EXIT.couldNotRun);
    expect(e.message).toBe(`x: --url, --secret (or --secret-file), --admin-token (or ADMIN_TOKEN) required\n${USAGE}`);
  });

  it('met by --secret-file and by ADMIN_TOKEN; an empty ADMIN_TOKEN does not', () => {
    expect(() => require({ url: 'u', 'secret-file': ['f'] }, { ADMIN_TOKEN: 't' })).not.toThrow();
    expect(() => require({ url: 'u', secret: ['s'], 'admin-token': 't' })).not.toThrow();
    expect(exitOf(() => require({ url: 'u', secret: ['s'] }, { ADMIN_TOKEN: '' })).message.split('\n')[0]).toBe('x: --admin-token (or ADMIN_TOKEN) required');
  });
});
