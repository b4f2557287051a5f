import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { describeHoldEndToEnd } from './support/hold-suite.js';

// Redlock over the five shared masters: the lock is the plain key on each master (default prefix ''),
// so deleting it on every master loses it; there is no fencing token to pass on.
describeHoldEndToEnd(
  'redlock',
  async () => {
    const { redlockUrls } = topology();
    const clients = redlockUrls.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 }));
    await Promise.all(clients.map((client) => client.connect()));
    return {
      env: { FENCELOCK_BACKEND: 'redlock', FENCELOCK_REDLOCK_URLS: redlockUrls.join(',') },
      shortLifetime: ['--ttl', '1s'],
      removeLock: async (key) => {
        await Promise.all(clients.map((client) => client.del(key)));
      },
      close: async () => {
        for (const client of clients) client.disconnect();
      },
    };
  },
  { fencing: 'none', full: false, readWrite: false },
);
