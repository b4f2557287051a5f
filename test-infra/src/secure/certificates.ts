/**
 * Throwaway TLS material for the secured servers: a CA, a server certificate for 127.0.0.1, client
 * certificates signed by that CA, and one client certificate from an unrelated CA (a certificate the
 * servers must refuse). Generated with the `openssl` command line into a directory the caller owns
 * (mode 0700), never committed, removed with that directory.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InfraError } from '../errors.js';

const run = promisify(execFile);
// One openssl call generates a 2048-bit key in well under a second; far above that is a hang.
const OPENSSL_TIMEOUT_MS = 30_000;
const DAYS = '2';

/** Paths of one key pair: a PEM certificate and its PEM private key. */
export interface CertificatePair {
  readonly cert: string;
  readonly key: string;
}

/** The files {@link generateCertificates} wrote. */
export interface TestCertificates {
  readonly dir: string;
  /** The CA every server and good client trusts. */
  readonly ca: string;
  /** The servers' certificate (subjectAltName IP:127.0.0.1, DNS:localhost). */
  readonly server: CertificatePair;
  /** Client certificates signed by {@link ca}, by common name. */
  readonly clients: Readonly<Record<string, CertificatePair>>;
  /** A client certificate signed by an unrelated CA: a server must refuse it. */
  readonly foreignClient: CertificatePair;
  /** The unrelated CA (a client trusting only it must refuse the servers). */
  readonly foreignCa: string;
}

async function openssl(args: readonly string[], cwd: string): Promise<void> {
  try {
    await run('openssl', [...args], { cwd, timeout: OPENSSL_TIMEOUT_MS, killSignal: 'SIGKILL' });
  } catch (error) {
    const stderr = (error as { stderr?: unknown }).stderr;
    throw new InfraError(`openssl ${args[0] ?? ''} failed: ${String(stderr ?? error)}`);
  }
}

async function newCa(dir: string, name: string): Promise<CertificatePair> {
  const pair = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  await openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', pair.key, '-out', pair.cert, '-days', DAYS, '-subj', `/CN=${name}`],
    dir,
  );
  return pair;
}

async function signed(dir: string, ca: CertificatePair, name: string, extensions: string): Promise<CertificatePair> {
  const pair = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  const request = join(dir, `${name}.csr`);
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, extensions, { mode: 0o600 });
  await openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', pair.key, '-out', request, '-subj', `/CN=${name}`], dir);
  await openssl(
    ['x509', '-req', '-in', request, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', pair.cert, '-days', DAYS, '-extfile', extFile],
    dir,
  );
  return pair;
}

/**
 * Writes a CA, a server certificate and a client certificate per name in `clientNames` into `dir`
 * (created with mode 0700; private keys 0600).
 *
 * @throws InfraError when openssl is missing or fails.
 */
export async function generateCertificates(dir: string, clientNames: readonly string[]): Promise<TestCertificates> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const ca = await newCa(dir, 'fencelock-test-ca');
  const server = await signed(
    dir,
    ca,
    'server',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
  );
  const clients: Record<string, CertificatePair> = {};
  for (const name of clientNames) {
    clients[name] = await signed(dir, ca, name, 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n');
  }
  const foreign = await newCa(dir, 'foreign-ca');
  const foreignClient = await signed(dir, foreign, 'foreign-client', 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n');
  for (const pair of [ca, server, foreign, foreignClient, ...Object.values(clients)]) await chmod(pair.key, 0o600);
  return { dir, ca: ca.cert, server, clients, foreignClient, foreignCa: foreign.cert };
}

/** The PEM text of a file, for client options that take contents rather than paths. */
export function pem(path: string): Promise<Buffer> {
  return readFile(path);
}
