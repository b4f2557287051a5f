/**
 * `@fencelock/core/adapter`: what an adapter author needs to build a provider on a new backend.
 * An adapter writes one {@link LockBackend} (take, extend, release, inspect on its backend); core
 * derives everything around a grant from it. Before writing a timer, retry, drift margin, timeout,
 * session or wait loop in an adapter, use the one here.
 */
export * from './index.js';
export * from './spi.js';
