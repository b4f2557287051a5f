import { describe, expect, it } from 'vitest';
import { ScriptRunner, isNoScriptError, scriptSha, type ScriptArgument, type ScriptTransport } from '../src/index.js';

const script = { name: 'testScript', lua: "return redis.call('GET', KEYS[1])", numberOfKeys: 1 };

/** A transport that records the commands it is sent and answers from `answer`; `connection` is its scope. */
function fakeClient(answer: (name: string) => Promise<unknown>) {
  const sent: { name: string; first: string; args: readonly ScriptArgument[] }[] = [];
  const client = { connection: {} as object };
  const transport: ScriptTransport = {
    sendScript: (name, first, args) => {
      sent.push({ name, first, args });
      return answer(name);
    },
    scriptScope: () => client.connection,
  };
  return { client, sent, transport };
}

/** A runner whose script is loaded (one call succeeded); `failWith(error)` makes each EVALSHA fail with it from then on. */
async function loadedRunner() {
  let failure: Error | undefined;
  const { sent, transport } = fakeClient(async (name) => {
    if (name === 'evalsha' && failure !== undefined) throw failure;
    return 'ok';
  });
  const runner = new ScriptRunner(transport, script);
  await runner.run([1, 'k']);
  return {
    sent,
    runner,
    failWith: (error: Error | undefined) => {
      failure = error;
    },
  };
}

const noScript = (): Error => Object.assign(new Error('NOSCRIPT No matching script. Please use EVAL.'), { name: 'ReplyError' });

describe('ScriptRunner', () => {
  it('sends the script itself until a call on the connection succeeded, then its SHA', async () => {
    const { client, sent, transport } = fakeClient(async () => 'ok');
    const runner = new ScriptRunner(transport, script);
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
    client.connection = {};
    await runner.run([1, 'k']);
    expect(sent.at(-1)?.name).toBe('eval');
  });

  it('counts a call sent before the connection existed as loaded on the connection that answered it', async () => {
    // ioredis queues the first commands until its socket is up: no scope yet when the call is sent.
    let connected = false;
    const { client, sent, transport } = fakeClient(async () => {
      connected = true;
      return 'ok';
    });
    transport.scriptScope = () => (connected ? client.connection : undefined);
    const runner = new ScriptRunner(transport, script);
    await runner.run([1, 'k']);
    await runner.run([1, 'k']);
    expect(sent.map((command) => command.name)).toEqual(['eval', 'evalsha']);
  });

  it('runs again as EVAL after NOSCRIPT, and passes any other failure on', async () => {
    const { sent, runner, failWith } = await loadedRunner();
    failWith(noScript());
    const error = await runner.run([1, 'k']).catch((e: unknown) => e);
    expect(isNoScriptError(error)).toBe(true);
    expect(await runner.runAgain(error, [1, 'k'])).toBe('ok');
    expect(sent.at(-1)?.name).toBe('eval');
    const other = new Error('Connection is closed.');
    await expect(runner.runAgain(other, [1, 'k'])).rejects.toBe(other);
    expect(isNoScriptError(other)).toBe(false);
  });

  it('after a failure reported with failed(), sends nothing again: NOSCRIPT makes the next call EVAL, any other failure does not', async () => {
    const { sent, runner, failWith } = await loadedRunner();
    failWith(new Error('Connection is closed.'));
    runner.failed(await runner.run([1, 'k']).catch((e: unknown) => e));
    expect(sent.map((command) => command.name)).toEqual(['eval', 'evalsha']);
    failWith(undefined);
    await runner.run([1, 'k']);
    expect(sent.at(-1)?.name).toBe('evalsha');
    failWith(noScript());
    runner.failed(await runner.run([1, 'k']).catch((e: unknown) => e));
    // Nothing was resent: the failed call is the caller's to report.
    expect(sent.map((command) => command.name)).toEqual(['eval', 'evalsha', 'evalsha', 'evalsha']);
    failWith(undefined);
    await runner.run([1, 'k']);
    expect(sent.at(-1)?.name).toBe('eval');
  });

  it("recognises NOSCRIPT as ioredis and node-redis give it (the reply) and as Valkey GLIDE words it", () => {
    const glide = new Error('An error was signalled by the server: - NoScriptError: No matching script. Please use EVAL.');
    glide.name = 'RequestError';
    expect(isNoScriptError(glide)).toBe(true);
    expect(isNoScriptError(new Error('NOSCRIPT No matching script. Please use EVAL.'))).toBe(true);
    const otherReply = new Error('An error was signalled by the server: - ResponseError: WRONGTYPE Operation against a key holding the wrong kind of value');
    expect(isNoScriptError(otherReply)).toBe(false);
  });
});
