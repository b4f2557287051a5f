/**
 * `wireCommand` writes a script call itself: what it writes, and what ioredis reads of the command
 * (its arguments, the cluster slot they give), must be exactly what each supported ioredis family
 * builds for the same call. The calls reach real servers in every provider suite; here each byte.
 */
import { Command as Command5 } from 'ioredis';
import { Command as Command6 } from 'ioredis6';
import { Command as CommandValkey } from 'iovalkey';
import { describe, expect, it } from 'vitest';
import type { IoredisCommandClass, ScriptArgument } from '../src/index.js';
import { wireCommand } from '../src/client/ioredis-wire-command.js';

interface Inspectable {
  args: unknown[];
  toWritable(socket: unknown): string | Buffer;
  getSlot(): number | null;
  promise: Promise<unknown>;
  resolve(reply: unknown): void;
}

const FAMILIES: [string, IoredisCommandClass][] = [
  ['ioredis 5', Command5 as unknown as IoredisCommandClass],
  ['ioredis 6', Command6 as unknown as IoredisCommandClass],
  ['iovalkey', CommandValkey as unknown as IoredisCommandClass],
];

const SHA = '5b6ae42fefde32584ce25aaf69d955275f59b244';
const CALLS: [string, string, ScriptArgument[]][] = [
  ['an acquire', SHA, [3, 'orders:42', '{a}fencelock:fence:orders:42', '{a}fencelock:meta:orders:42', 'e5f1c1d2-0b6e-4f7e-9a56-1d2b3c4d5e6f', 10_000, '1', '']],
  ['keys and arguments beyond ASCII', SHA, [2, 'ключ/🔒', '{x}fencelock:fence:ключ/🔒', 'владелец 🔑', 'é']],
  ['empty and NUL-bearing arguments', SHA, [1, 'a\0b', '', '\0', 0, -1, 1.5]],
  ['the script itself (EVAL)', "return redis.call('GET', KEYS[1]) -- «ключ»", [1, 'k', 'v']],
];

for (const [family, Command] of FAMILIES) {
  describe(`wireCommand, ${family}`, () => {
    for (const [what, body, args] of CALLS) {
      it(`writes ${what} byte for byte as ${family} does, with the same arguments and slot`, () => {
        const name = body === SHA ? 'evalsha' : 'eval';
        const ours = wireCommand(Command, name, body, args) as unknown as Inspectable;
        const theirs = new Command(name, [body, ...args], { replyEncoding: 'utf8' }) as unknown as Inspectable;
        const written = ours.toWritable(undefined);
        expect(typeof written).toBe('string');
        expect(Buffer.from(written as string)).toEqual(Buffer.from(theirs.toWritable(undefined) as string));
        // Written again (a resend after MOVED, a queued command written on connect): the same request.
        expect(ours.toWritable(undefined)).toBe(written);
        expect(ours.args).toEqual(theirs.args);
        expect(ours.getSlot()).toBe(theirs.getSlot());
      });
    }

    it('resolves its promise with the reply as text, as the client methods do', async () => {
      const command = wireCommand(Command, 'evalsha', SHA, [1, 'k']) as unknown as Inspectable;
      command.resolve(Buffer.from('1712345678901234000'));
      await expect(command.promise).resolves.toBe('1712345678901234000');
    });
  });
}
