/**
 * The conformance suite on a secured etcd: TLS with client certificates, authentication on, and the
 * provider connected as `locker`, whose only role is the README's least-privilege recipe (read-write
 * on the `fencelock/` prefix). The harness reads and deletes as root, like an operator.
 */
import { readFileSync } from 'node:fs';
import { describeLockProvider } from '@fencelock/conformance';
import { SECURE_ETCD_LOCK_PREFIX, startSecureEtcd } from '@fencelock/test-infra';
import { Etcd3, type IOptions } from 'etcd3';
import { afterAll } from 'vitest';
import { OwnClientProvider } from './own-client-provider.js';
import { backendWaiters, deleteLock } from './backend-waiters.js';

const secure = await startSecureEtcd();
const { certificates, clientCertificate, users } = secure;
const connection = (user: { username: string; password: string }): IOptions => ({
  hosts: secure.endpoint,
  credentials: {
    rootCertificate: readFileSync(certificates.ca),
    privateKey: readFileSync(clientCertificate.key),
    certChain: readFileSync(clientCertificate.cert),
  },
  auth: user,
});
const root = new Etcd3(connection(users.root));
afterAll(async () => {
  root.close();
  await secure.stop();
});


describeLockProvider({
  name: 'etcd over TLS as a user limited to the lock prefix',
  createProvider: () => {
    return new OwnClientProvider(new Etcd3(connection(users.locker)), { sessionTtlMs: 3_000 });
  },
  expectCapabilities: { fencing: 'global', lossDetection: true, notify: true, fifo: true, readWrite: true, deletionNotice: 'watch' },
  harness: {
    backendWaiters: backendWaiters(root, SECURE_ETCD_LOCK_PREFIX),
    deleteLock: deleteLock(root, SECURE_ETCD_LOCK_PREFIX),
    crashProvider: async (provider) => {
      if (provider instanceof OwnClientProvider) provider.client.close();
    },
  },
});
