/**
 * What the `instrument…` functions return: stops recording. Also usable with `using`.
 */
export interface Instrumentation extends Disposable {
  /** Removes every listener this instrumentation added. Idempotent. */
  close(): void;
}
