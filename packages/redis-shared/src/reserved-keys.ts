/**
 * Full lock keys of this form are reserved for fencelock's side keys (fence counters, metadata,
 * waiter registries of `@fencelock/redis`; waiter registries of `@fencelock/redlock`) and refused as
 * lock keys, so no lock can ever collide with another lock's side key.
 */
export const RESERVED_KEY_PATTERN = /^\{[0-9a-z]+\}fencelock:/;
