export { ZooKeeperLockProvider, createZooKeeperLockProvider } from './zookeeper-lock-provider.js';
export type { ZooKeeperLockProviderOptions } from './options.js';
export { DEFAULT_ROOT, DEFAULT_SESSION_TIMEOUT_MS, MIN_SESSION_TIMEOUT_MS } from './options.js';
export type { ContenderNaming } from './contender-names.js';
export { encodeKeySegment, decodeKeySegment } from './key-encoding.js';
export { ZOOKEEPER_CAPABILITIES } from './zookeeper-backend.js';
export { zooKeeperDigestId } from './access.js';
export type { ZooKeeperAclEntry, ZooKeeperAclOption, ZooKeeperAuth, ZooKeeperPermission } from './access.js';
