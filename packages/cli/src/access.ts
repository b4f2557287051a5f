/**
 * Credentials and TLS material for the backend, from flags naming FILES or from the environment,
 * never from a flag holding a secret (a command line is visible to every user of the machine).
 * Files are read here, before any network call, so a missing one is a usage error.
 */
import { readFileSync } from 'node:fs';
import type { BackendName, Env, Values } from './backend-config.js';
import { UsageError } from './usage-error.js';

/** Who to be on the backend, and the TLS material to connect with. */
export interface Access {
  readonly user?: string;
  /** Never printed; kept out of every message. */
  readonly password?: string;
  /** The CA is always there when TLS material is (a client certificate alone is refused). */
  readonly tls?: { readonly ca: Buffer; readonly cert?: Buffer; readonly key?: Buffer };
}

/** The access flags and their variables (FENCELOCK_PASSWORD has no flag on purpose). */
export const ACCESS_SOURCES = {
  user: { flag: 'user', env: 'FENCELOCK_USER' },
  passwordFile: { flag: 'password-file', env: 'FENCELOCK_PASSWORD_FILE' },
  tlsCa: { flag: 'tls-ca', env: 'FENCELOCK_TLS_CA' },
  tlsCert: { flag: 'tls-cert', env: 'FENCELOCK_TLS_CERT' },
  tlsKey: { flag: 'tls-key', env: 'FENCELOCK_TLS_KEY' },
} as const;
/** The variable holding a password directly (for secret stores that inject variables). */
export const PASSWORD_ENV = 'FENCELOCK_PASSWORD';

// What each backend's provider takes (all tested on secured servers).
const SUPPORTED: Readonly<Record<BackendName, { readonly tls: boolean }>> = {
  redis: { tls: true },
  redlock: { tls: true },
  etcd: { tls: true },
  // node-zookeeper-client has no TLS; digest authentication only.
  zookeeper: { tls: false },
  postgres: { tls: true },
};

function setting(values: Values, env: Env, source: { flag: string; env: string }): { value: string; origin: string } | undefined {
  const flag = values[source.flag];
  if (typeof flag === 'string') return { value: flag, origin: `--${source.flag}` };
  const variable = env[source.env];
  if (variable !== undefined && variable.trim() !== '') return { value: variable, origin: source.env };
  return undefined;
}

function readFile(path: { value: string; origin: string }, what: string): Buffer {
  try {
    return readFileSync(path.value);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new UsageError(`${path.origin}: cannot read the ${what} file ${JSON.stringify(path.value)} (${typeof code === 'string' ? code : 'unreadable'})`);
  }
}

/**
 * Reads the access settings for `backend`: `undefined` when none is given.
 * @throws UsageError for a setting the backend cannot use, a half-given pair, or an unreadable file.
 */
export function resolveAccess(backend: BackendName, values: Values, env: Env): Access | undefined {
  const user = setting(values, env, ACCESS_SOURCES.user);
  const passwordFile = setting(values, env, ACCESS_SOURCES.passwordFile);
  const passwordEnv = env[PASSWORD_ENV];
  const tlsCa = setting(values, env, ACCESS_SOURCES.tlsCa);
  const tlsCert = setting(values, env, ACCESS_SOURCES.tlsCert);
  const tlsKey = setting(values, env, ACCESS_SOURCES.tlsKey);
  const given = [user, passwordFile, tlsCa, tlsCert, tlsKey].filter((entry) => entry !== undefined);
  if (given.length === 0 && (passwordEnv === undefined || passwordEnv === '')) return undefined;
  if (!SUPPORTED[backend].tls) {
    const tls = [tlsCa, tlsCert, tlsKey].find((entry) => entry !== undefined);
    if (tls !== undefined) throw new UsageError(`${tls.origin}: the ZooKeeper client cannot speak TLS; reach the ensemble through a TLS tunnel you control`);
  }
  if (passwordFile !== undefined && passwordEnv !== undefined && passwordEnv !== '') {
    throw new UsageError(`give the password either in ${passwordFile.origin} or in ${PASSWORD_ENV}, not both`);
  }
  // One trailing newline is what editors and `echo` leave; anything else is part of the password.
  const password = passwordFile === undefined ? passwordEnv || undefined : readFile(passwordFile, 'password').toString('utf8').replace(/\r?\n$/, '');
  if (password === '') throw new UsageError(`${passwordFile?.origin ?? PASSWORD_ENV}: the password is empty`);
  if ((user === undefined) !== (password === undefined)) {
    throw new UsageError(user === undefined ? 'a password needs a user: give --user or FENCELOCK_USER' : `${user.origin} needs a password: give --password-file or ${PASSWORD_ENV}`);
  }
  if (user !== undefined && (user.value === '' || user.value.includes(':'))) {
    throw new UsageError(`${user.origin} must be a non-empty user name without ":"`);
  }
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new UsageError('give --tls-cert and --tls-key together (the client certificate and its private key)');
  }
  if (tlsCert !== undefined && tlsCa === undefined) {
    throw new UsageError('--tls-cert needs --tls-ca too: the CA certificate that signed the server\'s certificate');
  }
  const tls =
    tlsCa === undefined && tlsCert === undefined
      ? undefined
      : {
          ca: readFile(tlsCa as { value: string; origin: string }, 'CA certificate'),
          ...(tlsCert === undefined ? {} : { cert: readFile(tlsCert, 'client certificate') }),
          ...(tlsKey === undefined ? {} : { key: readFile(tlsKey, 'private key') }),
        };
  return {
    ...(user === undefined ? {} : { user: user.value }),
    ...(password === undefined ? {} : { password }),
    ...(tls === undefined ? {} : { tls }),
  };
}
