export { EtcdLockProvider, createEtcdLockProvider } from './etcd-lock-provider.js';
export type { EtcdLockOwnership, EtcdLockProviderOptions } from './etcd-lock-provider.js';
export { ETCD_CAPABILITIES } from './etcd-backend.js';
export { electionName, escapeKeySegment, lockName } from './key-encoding.js';
export type { KeyEncoding } from './key-encoding.js';
