import { MemoryLockProvider } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { ReportLog, leakedSecrets } from '../src/index.js';

describe('leakedSecrets', () => {
  it('finds a secret in a message, a stack, a nested cause and a plain property, and nothing else', () => {
    const inner = new Error('auth with s3cret-b failed');
    const reported = [new Error('outer', { cause: inner }), { detail: { deeper: 'token=s3cret-c' } }, 'plain s3cret-d'];
    expect(leakedSecrets(reported, ['s3cret-a', 's3cret-b', 's3cret-c', 's3cret-d', ''])).toEqual([1, 2, 3]);
  });

  it('survives cycles', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    expect(leakedSecrets([a], ['a'])).toEqual([0]);
    expect(leakedSecrets([a], ['b'])).toEqual([]);
  });
});

describe('ReportLog', () => {
  it('records the events of a watched provider and the rejections it is given', async () => {
    const reports = new ReportLog();
    const provider = reports.watch(new MemoryLockProvider());
    const held = await provider.acquire('k');
    const error = await reports.rejection(provider.acquire('k', { waitMs: 0 }));
    expect(error).toMatchObject({ code: 'LOCK_TIMEOUT' });
    await held.release();
    await provider.close();
    expect(reports.items.length).toBeGreaterThan(2);
    expect(reports.leaked(['LOCK_TIMEOUT', 'nowhere'])).toEqual([0]);
    await expect(reports.rejection(Promise.resolve())).rejects.toThrow('expected a rejection');
  });
});
