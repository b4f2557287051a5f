// What a user writes after `npm install @fencelock/core @fencelock/postgres pg`, as an ES module.
import { LockError } from '@fencelock/core';
import { createPostgresLockProvider } from '@fencelock/postgres';

const [url, key] = process.argv.slice(2);
const locks = createPostgresLockProvider({ connection: url });
const lock = await locks.acquire(key, { waitMs: 5_000 });
const rival = await locks.tryAcquire(key); // one owner per key, even within one session
const refusal = await locks.acquire(key, { waitMs: -1 }).then(() => undefined, (error) => error);
console.log(`token=${lock.fencingToken} held=${lock.isHeld()} rival=${rival === undefined ? 'refused' : 'granted'}`);
console.log(`error=${refusal?.code} lockError=${refusal instanceof LockError}`);
console.log(`released=${await lock.release()}`);
await locks.close();
