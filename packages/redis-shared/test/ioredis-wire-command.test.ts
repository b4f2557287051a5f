/**
 * `wireCommands` writes a script call itself: what it writes, and what ioredis reads of the command
 * (its arguments, the cluster slot they give), must be exactly what each supported ioredis family
 * builds for the same call. The calls reach real servers in every provider suite; here each byte.
 */
import { Command as Command5 } from 'ioredis';
import { Command as Command6 } from 'ioredis6';
import { Command as CommandValkey } from 'iovalkey';
import { describe, expect, it, vi } from 'vitest';
import type { IoredisCommandClass, ScriptArgument } from '../src/index.js';
import { wireCommands } from '../src/client/ioredis-wire-command.js';
import { RespRequestEncoder } from '../src/client/resp-request-encoder.js';

function wireCommand(Command: IoredisCommandClass, name: string, body: string, args: readonly ScriptArgument[], forCluster = false, boundElsewhere = false) {
  return wireCommands(Command, { forCluster, boundElsewhere })(name, body, args);
}

interface Inspectable {
  args: unknown[];
  setTimeout(ms: number): void;
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
  ['empty and NUL-bearing arguments', SHA, [1, 'a\0b', '', '\0', 0, -1, 1.5, 1234567890123]],
  ['an argument of more than 64 ASCII bytes', SHA, [1, 'k', 'x'.repeat(65), 'y'.repeat(64)]],
  ['the script itself (EVAL)', "return redis.call('GET', KEYS[1]) -- «ключ»", [1, 'k', 'v']],
];

for (const [family, Command] of FAMILIES) {
  describe(`wireCommand, ${family}`, () => {
    for (const [what, body, args] of CALLS) {
      const name = body === SHA ? 'evalsha' : 'eval';
      const theirs = (): Inspectable => new Command(name, [body, ...args], { replyEncoding: 'utf8' }) as unknown as Inspectable;

      it(`writes ${what} byte for byte as ${family} does`, () => {
        const ours = wireCommand(Command, name, body, args) as unknown as Inspectable;
        const written = ours.toWritable(undefined);
        expect(Buffer.isBuffer(written)).toBe(true);
        expect(written).toEqual(Buffer.from(theirs().toWritable(undefined) as string));
        // Written again (a resend after MOVED, a queued command written on connect): the same request.
        expect(ours.toWritable(undefined)).toBe(written);
      });

      it(`gives ${what} on a cluster the arguments and the slot ${family} gives it`, () => {
        const ours = wireCommand(Command, name, body, args, true) as unknown as Inspectable;
        expect(ours.args).toEqual(theirs().args);
        expect(ours.getSlot()).toBe(theirs().getSlot());
        expect(ours.toWritable(undefined)).toEqual(Buffer.from(theirs().toWritable(undefined) as string));
      });
    }

    it('encodes each request on its own: a long one after short ones, and short ones after it', () => {
      const script = `-- ${'«x» '.repeat(2_000)}\nreturn 1`;
      for (const [body, args] of [[SHA, [1, 'a']], [script, [1, 'ключ', 'v'.repeat(70)]], [SHA, [2, 'b', 'c', 'd']]] as const) {
        const name = body === SHA ? 'evalsha' : 'eval';
        const ours = wireCommand(Command, name, body, args as readonly ScriptArgument[]) as unknown as Inspectable;
        const theirs = new Command(name, [body, ...args], { replyEncoding: 'utf8' }) as unknown as Inspectable;
        const expected = Buffer.from(theirs.toWritable(undefined) as string);
        expect(ours.toWritable(undefined)).toEqual(expected);
      }
    });

    it("arms ioredis' per-command timer unless the caller bounds the commands itself", () => {
      const setTimer = vi.spyOn(globalThis, 'setTimeout');
      try {
        (wireCommand(Command, 'evalsha', SHA, [1, 'k'], false, true) as unknown as Inspectable).setTimeout(60_000);
        expect(setTimer).not.toHaveBeenCalled();
        const own = wireCommand(Command, 'evalsha', SHA, [1, 'k']) as unknown as Inspectable;
        own.setTimeout(60_000);
        expect(setTimer).toHaveBeenCalledTimes(1);
        own.resolve(Buffer.from('1'));
      } finally {
        setTimer.mockRestore();
      }
    });

    it('encodes a request sent to several clients sharing an encoder once (a Redlock round), and each command writes those bytes', () => {
      const [, body, args] = CALLS[0] as [string, string, ScriptArgument[]];
      const encoder = new RespRequestEncoder();
      const masters = [0, 1, 2, 3, 4].map(() => wireCommands(Command, { forCluster: false, boundElsewhere: true, encoder }));
      const commands = masters.map((build) => build('evalsha', body, args) as unknown as Inspectable);
      const bytes = commands.map((command) => command.toWritable(undefined));
      for (const written of bytes) expect(written).toBe(bytes[0]);
      // Builders given no encoder keep their own: each encodes for itself.
      const own = [0, 1].map(() => wireCommands(Command, { forCluster: false, boundElsewhere: true })('evalsha', body, args) as unknown as Inspectable);
      expect(own[0]?.toWritable(undefined)).not.toBe(own[1]?.toWritable(undefined));
      expect(own[0]?.toWritable(undefined)).toEqual(bytes[0]);
      const expected = new Command('evalsha', [body, ...args], { replyEncoding: 'utf8' }) as unknown as Inspectable;
      expect(Buffer.from(bytes[0] as Buffer)).toEqual(Buffer.from(expected.toWritable(undefined)));
    });

    it("gives the commands of every client one class (one shape for ioredis' code to read), per timer choice", () => {
      // A Redlock round sends on five clients: five classes would make every property ioredis reads
      // of a command (in its constructor, its queues, its reply handling) megamorphic.
      const classOf = (boundElsewhere: boolean, forCluster = false) =>
        Object.getPrototypeOf(wireCommands(Command, { forCluster, boundElsewhere })('evalsha', SHA, [1, 'k'])) as object;
      const untimed = classOf(false);
      expect(classOf(false)).toBe(untimed);
      expect(classOf(false, true)).toBe(untimed);
      const bounded = classOf(true);
      expect(classOf(true)).toBe(bounded);
      expect(bounded).not.toBe(untimed);
      expect(Object.getPrototypeOf(bounded)).toBe(Command.prototype);
    });

    it('resolves its promise with the reply as text, as the client methods do', async () => {
      const command = wireCommand(Command, 'evalsha', SHA, [1, 'k']) as unknown as Inspectable;
      command.resolve(Buffer.from('1712345678901234000'));
      await expect(command.promise).resolves.toBe('1712345678901234000');
    });
  });
}
