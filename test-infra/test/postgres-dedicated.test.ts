import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPostgresBinDir, isListening, postgresProbe, startPostgresServer, type PostgresServer } from '../src/index.js';
import { processState } from '../src/processes.js';

const run = promisify(execFile);

/** One statement through Debian's psql over TCP, bounded; its unaligned output. */
async function psql(server: PostgresServer, sql: string): Promise<string> {
  const binDir = findPostgresBinDir();
  if (binDir === undefined) throw new Error('PostgreSQL is not installed');
  const { stdout } = await run(join(binDir, 'psql'), [server.url, '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql], { timeout: 10_000 });
  return stdout.trim();
}

/** The processes the postmaster started (one per session and background worker). */
function children(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

describe('startPostgresServer()', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgresServer();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  }, 30_000);

  it('starts on a free loopback port, durable unless told otherwise, and accepts connections', async () => {
    expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
    expect((await postgresProbe(server.port, { timeoutMs: 1_000 }))?.accepting).toBe(true);
    expect(await psql(server, "SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit')")).toBe('on on');
  });

  it('pause() stops the postmaster and every process it started; resume() lets them all run again', async () => {
    const postmaster = server.pid;
    const processes = [postmaster, ...children(postmaster)];
    expect(processes.length).toBeGreaterThan(1);
    await server.pause();
    try {
      expect(server.paused).toBe(true);
      expect(processState(postmaster)).toBe('T');
      // Every other one stopped too, unless it had exited already (a zombie the stopped postmaster
      // has not reaped yet, e.g. the session of the previous psql call): nothing of it runs.
      expect(processes.map((pid) => processState(pid) ?? 'gone').filter((state) => state !== 'T' && state !== 'Z' && state !== 'gone')).toEqual([]);
      // A stopped postmaster answers no startup message.
      expect(await postgresProbe(server.port, { timeoutMs: 300 })).toBeUndefined();
    } finally {
      await server.resume();
    }
    expect(server.paused).toBe(false);
    expect(processes.map((pid) => processState(pid)).filter((state) => state === 'T')).toEqual([]);
    expect(await psql(server, 'SELECT 1')).toBe('1');
  });

  it('restart() is a fast shutdown and a start: committed data stays, the PID changes', async () => {
    await psql(server, 'CREATE TABLE IF NOT EXISTS kept (n int); INSERT INTO kept VALUES (1)');
    const before = server.pid;
    await server.restart();
    expect(server.pid).not.toBe(before);
    expect(await psql(server, 'SELECT count(*) FROM kept')).toBe('1');
  }, 60_000);

  it('kill() is a crash of the postmaster and all its processes; restart() recovers the committed data', async () => {
    await psql(server, 'INSERT INTO kept VALUES (2)');
    const processes = [server.pid, ...children(server.pid)];
    await server.kill();
    expect(server.running).toBe(false);
    expect(processes.map((pid) => processState(pid) ?? 'gone').filter((state) => state !== 'gone' && state !== 'Z')).toEqual([]);
    expect(await isListening(server.port, 500)).toBe(false);
    await server.restart();
    expect(await psql(server, 'SELECT count(*) FROM kept')).toBe('2');
  }, 60_000);

  it('stop() ends it and deletes its data dir; twice is harmless', async () => {
    const dataDir = (await psql(server, 'SHOW data_directory')).trim();
    expect(existsSync(dataDir)).toBe(true);
    await server.stop();
    await server.stop();
    expect(server.running).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
    expect(await isListening(server.port, 500)).toBe(false);
  }, 30_000);
});
