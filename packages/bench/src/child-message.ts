import type { ChildProcess } from 'node:child_process';

/**
 * The first IPC message from `child` that `accept` takes, within `timeoutMs`; rejects when the time
 * runs out or the child exits first (`what` names the message in either error). Every listener and
 * the timer are removed once it settles.
 */
export function nextChildMessage<M>(child: ChildProcess, accept: (message: M) => boolean, timeoutMs: number, what: string): Promise<M> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`${what}: nothing within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: M): void => {
      if (accept(message)) finish(undefined, message);
    };
    const onExit = (code: number | null): void => finish(new Error(`${what}: the process exited (${code}) before it`));
    function finish(error: Error | undefined, message?: M): void {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (message !== undefined) resolve(message);
      else reject(error);
    }
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}
