export { PostgresLockProvider, createPostgresLockProvider } from './postgres-lock-provider.js';
export type { PostgresLockProviderOptions } from './postgres-lock-provider.js';
export { POSTGRES_CAPABILITIES } from './postgres-backend.js';
export { DEFAULT_NAMESPACE, advisoryLockId } from './lock-id.js';
export type { LockIdFunction } from './lock-id.js';
export { DEFAULT_TABLE } from './sql.js';
export { DEFAULT_FENCES_TABLE, guardedWrite } from './guarded-write.js';
export type { GuardedWriteDatabase, GuardedWriteOptions } from './guarded-write.js';
