/** ZooKeeper four-letter-word commands (srvr, ruok, mntr, stat) over a raw socket. */
import net from 'node:net';
import { assertLoopbackHost } from './loopback.js';
import { LOOPBACK } from './ports.js';

/** A four-letter word the servers here whitelist (`4lw.commands.whitelist`). */
export type FourLetterWord = 'srvr' | 'ruok' | 'mntr' | 'stat';

/**
 * Sends `word` to ZooKeeper on `host` (default 127.0.0.1):`port` and resolves with the whole answer (the server
 * closes the connection after answering). Rejects on connection errors or after `timeoutMs` —
 * a paused server accepts the TCP connection in the kernel but never answers.
 */
export function fourLetterWord(port: number, word: FourLetterWord, timeoutMs = 1_000, host = LOOPBACK): Promise<string> {
  assertLoopbackHost(host, 'fourLetterWord');
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const timer = setTimeout(
      () => finish(new Error(`zookeeper ${host}:${port} did not answer ${word} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('end', () => finish());
    socket.once('close', () => finish());
    socket.once('error', (error) => finish(error));
    socket.once('connect', () => socket.write(word));
  });
}

/** A ZooKeeper server's role, from the `Mode:` line of `srvr`. */
export type ZooKeeperMode = 'leader' | 'follower' | 'observer' | 'standalone';

/**
 * The server's mode, or undefined while it is not serving (no quorum yet, "This ZooKeeper
 * instance is not currently serving requests") or not answering.
 */
export async function zooKeeperMode(port: number, timeoutMs = 1_000, host = LOOPBACK): Promise<ZooKeeperMode | undefined> {
  try {
    const answer = await fourLetterWord(port, 'srvr', timeoutMs, host);
    const match = /^Mode: (leader|follower|observer|standalone)\s*$/m.exec(answer);
    return match?.[1] as ZooKeeperMode | undefined;
  } catch {
    return undefined;
  }
}
