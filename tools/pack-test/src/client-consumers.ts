import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * One Redis client library as a user installs it next to `@fencelock/redis`, and how the adapters'
 * READMEs make its client (`url` is a `redis://host:port` URL in the scripts).
 */
export interface RedisClientLibrary {
  /** Short id: the consumer project's and its scripts' name. */
  readonly id: string;
  /** What `npm install` is given, as the README's install line says (`ioredis@^5.4.0`). */
  readonly install: string;
  /** The ES module import of the client's maker (`import { Redis } from 'ioredis';`). */
  readonly importLine: string;
  /** The same in CommonJS. */
  readonly requireLine: string;
  /** An expression (awaited) that makes a connected, or connecting, standalone client for `url`. */
  readonly open: string;
  /** A statement that closes `client` once the provider is closed (the provider never closes it). */
  readonly close: string;
}

const glideAddress = '{ host: new URL(url).hostname, port: Number(new URL(url).port) }';

/** The client libraries of the READMEs' "Clients" sections. */
export const REDIS_CLIENT_LIBRARIES: readonly RedisClientLibrary[] = [
  ...(['5', '6'] as const).map((major) => ({
    id: `ioredis${major}`,
    install: major === '5' ? 'ioredis@^5.4.0' : 'ioredis@^6.0.0',
    importLine: "import { Redis } from 'ioredis';",
    requireLine: "const { Redis } = require('ioredis');",
    open: 'new Redis(url)',
    close: 'client.disconnect();',
  })),
  {
    id: 'iovalkey',
    install: 'iovalkey@^0.4.0',
    importLine: "import { Redis } from 'iovalkey';",
    requireLine: "const { Redis } = require('iovalkey');",
    open: 'new Redis(url)',
    close: 'client.disconnect();',
  },
  ...(['5', '6'] as const).map((major) => ({
    id: `node-redis${major}`,
    install: `redis@^${major}.0.0`,
    importLine: "import { createClient } from 'redis';",
    requireLine: "const { createClient } = require('redis');",
    open: 'createClient({ url }).connect()',
    close: 'client.destroy();',
  })),
  {
    id: 'glide',
    install: '@valkey/valkey-glide@^2.0.0',
    importLine: "import { GlideClient } from '@valkey/valkey-glide';",
    requireLine: "const { GlideClient } = require('@valkey/valkey-glide');",
    open: `GlideClient.createClient({ addresses: [${glideAddress}] })`,
    close: 'client.close();',
  },
];

// The README's example with the client handed in, and what pack-install.test.ts's runConsumer reads
// (token, held, rival, error, lockError, released) printed as `name=value` words.
const body = (indent: string, provider = 'createRedisLockProvider({ client })'): string =>
  [
    `const locks = ${provider};`,
    'const lock = await locks.acquire(key, { ttlMs: 10_000, waitMs: 5_000 });',
    'const rival = await locks.tryAcquire(key); // locks are not reentrant: taken, even for us',
    'const refusal = await locks.acquire(key, { waitMs: -1 }).then(() => undefined, (error) => error);',
    "console.log(`token=${lock.fencingToken} held=${lock.isHeld()} rival=${rival === undefined ? 'refused' : 'granted'}`);",
    'console.log(`error=${refusal?.code} lockError=${refusal instanceof LockError}`);',
    'console.log(`released=${await lock.release()}`);',
    'await locks.close();',
  ]
    .map((line) => indent + line)
    .join('\n');

/** The ES module consumer of `library`: `node <id>.mjs <url> <key>`. */
export function esmConsumer(library: RedisClientLibrary): string {
  return [
    `// What a user writes after \`npm install @fencelock/core @fencelock/redis ${library.install.replace(/@[^@]*$/, '')}\`, as an ES module.`,
    "import { LockError } from '@fencelock/core';",
    "import { createRedisLockProvider } from '@fencelock/redis';",
    library.importLine,
    '',
    'const [url, key] = process.argv.slice(2);',
    `const client = await ${library.open};`,
    body(''),
    library.close,
    '',
  ].join('\n');
}

/** The CommonJS consumer of `library`: `node <id>.cjs <url> <key>`. */
export function cjsConsumer(library: RedisClientLibrary): string {
  return [
    '// The same in CommonJS.',
    "const { LockError } = require('@fencelock/core');",
    "const { createRedisLockProvider } = require('@fencelock/redis');",
    library.requireLine,
    '',
    'const [url, key] = process.argv.slice(2);',
    'async function main() {',
    `  const client = await ${library.open};`,
    body('  '),
    `  ${library.close}`,
    '}',
    'main().catch((error) => {',
    '  console.error(error);',
    '  process.exitCode = 1;',
    '});',
    '',
  ].join('\n');
}

/**
 * A TypeScript consumer of `library` (the same text as `.mts` under node16 and `.ts` under bundler),
 * using both adapters (`@fencelock/redis` and `@fencelock/redlock`) with that client, and the
 * connection options the adapters open with ioredis (typed by the adapters themselves, so that a
 * project without ioredis can read them). Where the library is of the ioredis family, its own
 * `RedisOptions` type must be accepted as `connection`.
 */
export function typeScriptConsumer(library: RedisClientLibrary): string {
  const ioredisFamily = ioredisPackageOf(library);
  return [
    "import { LockError, type LockHandle } from '@fencelock/core';",
    "import { createRedisLockProvider, type RedisLockProviderOptions } from '@fencelock/redis';",
    "import { createRedlockLockProvider } from '@fencelock/redlock';",
    library.importLine,
    ...(ioredisFamily === undefined ? [] : [`import type { ClusterOptions, RedisOptions } from '${ioredisFamily}';`]),
    '',
    `export async function holdOnce(url: string, key: string): Promise<bigint | undefined> {`,
    `  const client = await ${library.open};`,
    '  const locks = createRedisLockProvider({ client });',
    `  // The provider's client has the type of the client given.`,
    '  const same: typeof client = locks.client;',
    "  // @ts-expect-error the client is no number: if the types resolved to `any`, this line would compile.",
    '  const wrong: number = locks.client;',
    '  const lock: LockHandle = await locks.acquire(key, { ttlMs: 10_000, waitMs: 5_000 });',
    "  // @ts-expect-error ttlMs is a number of milliseconds: if the types resolved to `any`, this line would compile.",
    "  await locks.tryAcquire(key, { ttlMs: '10s' });",
    '  const redlock = createRedlockLockProvider({ masters: [client, url, { host: new URL(url).hostname, port: 6380 }] });',
    "  // @ts-expect-error masters is a list: if Redlock's types resolved to `any`, this line would compile.",
    '  createRedlockLockProvider({ masters: client });',
    '  try {',
    '    return same === client && wrong !== 0 ? lock.fencingToken : undefined;',
    '  } finally {',
    '    await lock.release();',
    '    await locks.close();',
    '    await redlock.close();',
    `    ${library.close}`,
    '  }',
    '}',
    '',
    '// Connections the adapters open themselves (with ioredis): a URL or options.',
    "export const byUrl: RedisLockProviderOptions = { connection: 'redis://127.0.0.1:6379' };",
    "export const byOptions: RedisLockProviderOptions = { connection: { host: '127.0.0.1', port: 6379, db: 1, tls: {} } };",
    "export const byNodes: RedisLockProviderOptions = { clusterNodes: [{ host: '127.0.0.1', port: 7000 }], clusterOptions: { redisOptions: { password: 'p' } } };",
    "// @ts-expect-error a port is a number: if the connection options were `any`, this line would compile.",
    "export const badPort: RedisLockProviderOptions = { connection: { host: '127.0.0.1', port: '6379' } };",
    ...(ioredisFamily === undefined
      ? []
      : [
          `// ${ioredisFamily}' own option types are accepted as they are.`,
          "export const fromRedisOptions = (connection: RedisOptions): RedisLockProviderOptions => ({ connection });",
          "export const fromClusterOptions = (clusterOptions: ClusterOptions): RedisLockProviderOptions => ({ clusterNodes: ['127.0.0.1:7000'], clusterOptions });",
          "export const redlockFromRedisOptions = (master: RedisOptions, redisOptions: RedisOptions) => createRedlockLockProvider({ masters: [master, master, master], redisOptions });",
        ]),
    '',
    "export const isFencelockError = (error: unknown): boolean => error instanceof LockError && error.code === 'LOCK_TIMEOUT';",
    '',
  ].join('\n');
}

/** The package of an ioredis-family library (`ioredis`, `iovalkey`), whose option types the consumer also uses. */
function ioredisPackageOf(library: RedisClientLibrary): string | undefined {
  if (library.id.startsWith('ioredis')) return 'ioredis';
  return library.id === 'iovalkey' ? 'iovalkey' : undefined;
}

// The packages' own declarations are checked too (`skipLibCheck: false`), whichever client is
// installed: they must not name a type of a client package the project may not have.
const TSCONFIG = (module: 'node16' | 'esnext', moduleResolution: 'node16' | 'bundler', file: string): string =>
  `${JSON.stringify(
    {
      compilerOptions: { module, moduleResolution, target: 'ES2022', lib: ['ES2022'], types: ['node'], strict: true, noEmit: true, skipLibCheck: false },
      files: [file],
    },
    null,
    2,
  )}\n`;

/**
 * The README's Redlock example over node-redis 6 masters, as an ES module:
 * `node redlock.mjs <url,url,…> <key>` (clients handed over unconnected: the provider connects them).
 */
export function redlockNodeRedisConsumer(): string {
  return [
    '// What a user writes after `npm install @fencelock/core @fencelock/redlock redis`.',
    "import { LockError } from '@fencelock/core';",
    "import { createRedlockLockProvider } from '@fencelock/redlock';",
    "import { createClient } from 'redis';",
    '',
    'const [urls, key] = process.argv.slice(2);',
    '// disableOfflineQueue: a request to a master that is down fails at once, as Redlock wants.',
    "const masters = urls.split(',').map((url) => createClient({ url, disableOfflineQueue: true }));",
    body('', 'createRedlockLockProvider({ masters })'),
    'for (const master of masters) master.destroy();',
    '',
  ].join('\n');
}

/**
 * Writes the consumers of `library` into `dir`: `<id>.mjs`, `<id>.cjs`, `consumer.mts` with
 * `tsconfig.node16.json`, `consumer.ts` with `tsconfig.bundler.json`.
 */
export async function writeClientConsumers(library: RedisClientLibrary, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const typeScript = typeScriptConsumer(library);
  await Promise.all([
    writeFile(path.join(dir, `${library.id}.mjs`), esmConsumer(library)),
    writeFile(path.join(dir, `${library.id}.cjs`), cjsConsumer(library)),
    writeFile(path.join(dir, 'consumer.mts'), typeScript),
    writeFile(path.join(dir, 'consumer.ts'), typeScript),
    writeFile(path.join(dir, 'tsconfig.node16.json'), TSCONFIG('node16', 'node16', 'consumer.mts')),
    writeFile(path.join(dir, 'tsconfig.bundler.json'), TSCONFIG('esnext', 'bundler', 'consumer.ts')),
  ]);
}
