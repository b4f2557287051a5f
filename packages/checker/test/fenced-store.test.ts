import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FencedStore, createFencedStoreClient, parseFencedWriteLog, startFencedStore } from '../src/index.js';

const directory = mkdtempSync(join(tmpdir(), 'fencelock-store-'));
const logPath = join(directory, 'writes.jsonl');
let store: FencedStore;

beforeAll(async () => {
  store = await startFencedStore({ logPath });
});
afterAll(async () => {
  await store.close();
  await store.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('the fenced store over HTTP on 127.0.0.1', () => {
  it('listens on loopback on a free port', () => {
    expect(store.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(store.port).toBeGreaterThan(0);
  });

  it('accepts writes with a token at least the highest, refuses a stale one, and logs every attempt', async () => {
    const client = createFencedStoreClient(store.url);
    const key = `jobs:${process.pid}:order`;
    const big = 2n ** 62n;
    expect(await client.write({ key, token: big, proc: 'p1', value: 'a' })).toEqual({ accepted: true, highestToken: big });
    expect(await client.write({ key, token: big - 1n, proc: 'p2', value: 'stale' })).toEqual({ accepted: false, highestToken: big });
    expect(await client.write({ key, token: big, proc: 'p1', value: 'b' })).toEqual({ accepted: true, highestToken: big });
    expect(await client.read(key)).toEqual(['a', 'b']);
    expect(store.values(key)).toEqual(['a', 'b']);

    const log = (await client.log()).filter((record) => record.key === key);
    expect(log.map(({ token, proc, accepted }) => ({ token, proc, accepted }))).toEqual([
      { token: big, proc: 'p1', accepted: true },
      { token: big - 1n, proc: 'p2', accepted: false },
      { token: big, proc: 'p1', accepted: true },
    ]);
    expect(log[0]?.t).toBeLessThanOrEqual(log[1]?.t ?? 0);
    const fromFile = parseFencedWriteLog(readFileSync(logPath, 'utf8')).filter((record) => record.key === key);
    expect(fromFile).toEqual(log);
  });

  it('answers bad requests with 400 and the client rejects them', async () => {
    const post = (body: string): Promise<Response> => fetch(`${store.url}/write`, { method: 'POST', body });
    expect((await post('{nope')).status).toBe(400);
    expect((await post(JSON.stringify({ key: 'k', token: 5, proc: 'p' }))).status).toBe(400);
    expect((await post(JSON.stringify({ key: '', token: '5', proc: 'p' }))).status).toBe(400);
    expect((await post('x'.repeat(70_000))).status).toBe(400);
    expect((await fetch(`${store.url}/nothing`)).status).toBe(404);
    const client = createFencedStoreClient(store.url);
    await expect(client.write({ key: '', token: 1n, proc: 'p' })).rejects.toThrow(/400/);
  });

  it('refuses anything but loopback', async () => {
    await expect(startFencedStore({ host: '0.0.0.0' })).rejects.toThrow(RangeError);
    expect(() => createFencedStoreClient('http://192.0.2.1:80')).toThrow(RangeError);
    expect(() => createFencedStoreClient('http://[::1]:80')).not.toThrow();
  });
});
