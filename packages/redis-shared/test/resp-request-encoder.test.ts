/**
 * `RespRequestEncoder` copies the parts a request shares with the last request of the same script
 * instead of encoding them again: every request of a long mixed sequence must still be exactly the
 * bytes ioredis writes for it, and stay so after the requests that follow it were encoded.
 */
import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { ScriptArgument } from '../src/index.js';
import { RespRequestEncoder } from '../src/client/resp-request-encoder.js';

const ACQUIRE_SHA = '5b6ae42fefde32584ce25aaf69d955275f59b244';
const RELEASE_SHA = '605639a656c6d998121b6c715e4430ce83c10ec0';
const SCRIPT = `-- «acquire» ${'x'.repeat(3_000)}\nreturn 1`;

function ioredisBytes(name: string, body: string, args: readonly ScriptArgument[]): Buffer {
  const command = new Command(name, [body, ...args], { replyEncoding: 'utf8' }) as unknown as { toWritable(socket: unknown): string };
  return Buffer.from(command.toWritable(undefined));
}

/** A deterministic mix of the calls a provider makes: a few lock keys, fresh owner ids, the odd change of TTL or count. */
function calls(count: number): [string, string, ScriptArgument[]][] {
  const out: [string, string, ScriptArgument[]][] = [];
  for (let i = 0; i < count; i += 1) {
    const key = ['orders:1', 'orders:2', 'ключ/🔒', `k${i % 7}`][i % 4] as string;
    const owner = `owner-${i}-${'é'.repeat(i % 3)}`;
    const ttl = i % 5 === 0 ? 30_000 : 10_000;
    if (i % 3 === 2) {
      out.push(['evalsha', RELEASE_SHA, [2, key, `{t}fencelock:waiters:${key}`, owner, 'fencelock:released', i % 2 === 0 ? '' : owner]]);
    } else if (i % 11 === 10) {
      out.push(['eval', SCRIPT, [1, key, owner, ttl]]);
    } else {
      const extra: ScriptArgument[] = i % 4 === 1 ? ['metadata'] : [];
      out.push(['evalsha', ACQUIRE_SHA, [3, key, `{t}fencelock:fence:${key}`, `{t}fencelock:meta:${key}`, owner, ttl, '1', i % 6 === 0 ? 0 : 4500, -1, 1.5, ...extra]]);
    }
  }
  return out;
}

describe('RespRequestEncoder', () => {
  it("encodes every request of a long mixed sequence as ioredis does, and leaves earlier requests' bytes as they were", () => {
    const encoder = new RespRequestEncoder();
    const sequence = calls(2_000);
    const written = sequence.map(([name, body, args]) => encoder.encode(name, body, args));
    sequence.forEach(([name, body, args], i) => {
      expect(written[i], `request ${i}`).toEqual(ioredisBytes(name, body, args));
    });
  });

  it('gives a request equal to the last one in every part the same bytes, and a request that differs in one part bytes of its own', () => {
    // A Redlock round sends one request to every master: encoded once, written on each socket.
    const encoder = new RespRequestEncoder();
    const sequence = calls(120);
    for (const [name, body, args] of sequence) {
      const first = encoder.encode(name, body, args);
      const copy = [...args];
      const again = encoder.encode(name, body, copy);
      expect(again).toBe(first);
      expect(again).toEqual(ioredisBytes(name, body, args));
      for (let part = 0; part < args.length; part += 1) {
        const changed = [...args];
        changed[part] = typeof args[part] === 'number' ? (args[part] as number) + 1 : `${String(args[part])}!`;
        const other = encoder.encode(name, body, changed);
        expect(other, `${name} with part ${part} changed`).not.toBe(first);
        expect(other).toEqual(ioredisBytes(name, body, changed));
        // The earlier bytes are left as they were.
        expect(first).toEqual(ioredisBytes(name, body, args));
      }
    }
  });

  it('encodes a request larger than its chunks (a long script with long arguments)', () => {
    const encoder = new RespRequestEncoder();
    const long = 'v'.repeat(20_000);
    for (const args of [[1, 'k', long], [1, 'k', long], [1, 'k', `${long}!`]] as ScriptArgument[][]) {
      expect(encoder.encode('eval', SCRIPT, args)).toEqual(ioredisBytes('eval', SCRIPT, args));
    }
  });

  it('keeps requests of separate encoders apart', () => {
    const first = new RespRequestEncoder();
    const second = new RespRequestEncoder();
    const a = first.encode('evalsha', ACQUIRE_SHA, [1, 'a', 'x']);
    const b = second.encode('evalsha', ACQUIRE_SHA, [1, 'b', 'x']);
    const c = first.encode('evalsha', ACQUIRE_SHA, [1, 'a', 'y']);
    expect(a).toEqual(ioredisBytes('evalsha', ACQUIRE_SHA, [1, 'a', 'x']));
    expect(b).toEqual(ioredisBytes('evalsha', ACQUIRE_SHA, [1, 'b', 'x']));
    expect(c).toEqual(ioredisBytes('evalsha', ACQUIRE_SHA, [1, 'a', 'y']));
  });
});
