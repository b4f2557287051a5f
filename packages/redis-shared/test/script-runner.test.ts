import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { ScriptRunner, isNoScriptError, scriptSha, type ScriptArgument } from '../src/index.js';

const script = { name: 'testScript', lua: "return redis.call('GET', KEYS[1])", numberOfKeys: 1 };

/** A client that records the commands it is sent and answers from `answer`. */
function fakeClient(answer: (name: string) => Promise<unknown>) {
  const sent: { name: string; first: string; args: readonly ScriptArgument[] }[] = [];
  const client = {
    isCluster: false,
    stream: {} as object,
    evalsha: (first: string, args: readonly ScriptArgument[]) => {
      sent.push({ name: 'evalsha', first, args });
      return answer('evalsha');
    },
    eval: (first: string, args: readonly ScriptArgument[]) => {
      sent.push({ name: 'eval', first, args });
      return answer('eval');
    },
  };
  return { client, sent, asRedis: client as unknown as Redis };
}

const noScript = (): Error => Object.assign(new Error('NOSCRIPT No matching script. Please use EVAL.'), { name: 'ReplyError' });

describe('ScriptRunner', () => {
  it('sends the script itself until a call on the connection succeeded, then its SHA', async () => {
    const { client, sent, asRedis } = fakeClient(async () => 'ok');
    const runner = new ScriptRunner(asRedis, script);
    expect(runner.sha).toBe(scriptSha(script.lua));
    expect(runner.sha).toMatch(/^[0-9a-f]{40}$/);
    expect(await runner.run([1, 'k'])).toBe('ok');
    expect(await runner.run([1, 'k'])).toBe('ok');
    expect(sent.map((command) => [command.name, command.first])).toEqual([
      ['eval', script.lua],
      ['evalsha', runner.sha],
    ]);
    expect(sent[1]?.args).toEqual([1, 'k']);
    // A reconnect (a new socket) may reach a restarted server: the script itself again.
    client.stream = {};
    await runner.run([1, 'k']);
    expect(sent.at(-1)?.name).toBe('eval');
  });

  it('runs again as EVAL after NOSCRIPT, and passes any other failure on', async () => {
    let failure: Error | undefined;
    const { sent, asRedis } = fakeClient(async (name) => {
      if (name === 'evalsha' && failure !== undefined) throw failure;
      return 'ok';
    });
    const runner = new ScriptRunner(asRedis, script);
    await runner.run([1, 'k']);
    failure = noScript();
    const error = await runner.run([1, 'k']).catch((e: unknown) => e);
    expect(isNoScriptError(error)).toBe(true);
    expect(await runner.runAgain(error, [1, 'k'])).toBe('ok');
    expect(sent.at(-1)?.name).toBe('eval');
    const other = new Error('Connection is closed.');
    await expect(runner.runAgain(other, [1, 'k'])).rejects.toBe(other);
    expect(isNoScriptError(other)).toBe(false);
  });

  it('hands the commands to a sender when the adapter sends them itself', async () => {
    const { sent, asRedis } = fakeClient(async () => 'unused');
    const viaSender: [string, string, readonly ScriptArgument[]][] = [];
    const runner = new ScriptRunner(asRedis, script, async (name, [first, args]) => {
      viaSender.push([name, first, args]);
      return 'sent';
    });
    expect(await runner.run([1, 'k', 'v'])).toBe('sent');
    expect(await runner.run([1, 'k', 'v'])).toBe('sent');
    expect(sent).toEqual([]);
    expect(viaSender).toEqual([
      ['eval', script.lua, [1, 'k', 'v']],
      ['evalsha', runner.sha, [1, 'k', 'v']],
    ]);
  });
});
