// What a user writes after `npm install @fencelock/core @fencelock/postgres pg`, in CommonJS.
const { LockError } = require('@fencelock/core');
const { createPostgresLockProvider } = require('@fencelock/postgres');

async function main(url, key) {
  const locks = createPostgresLockProvider({ connection: url });
  const lock = await locks.acquire(key, { waitMs: 5_000 });
  const rival = await locks.tryAcquire(key); // one owner per key, even within one session
  const refusal = await locks.acquire(key, { waitMs: -1 }).then(() => undefined, (error) => error);
  console.log(`token=${lock.fencingToken} held=${lock.isHeld()} rival=${rival === undefined ? 'refused' : 'granted'}`);
  console.log(`error=${refusal?.code} lockError=${refusal instanceof LockError}`);
  console.log(`released=${await lock.release()}`);
  await locks.close();
}

main(process.argv[2], process.argv[3]).catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
