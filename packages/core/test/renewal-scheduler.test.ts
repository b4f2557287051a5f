import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RenewalScheduler } from '../src/renewal-scheduler.js';

describe('RenewalScheduler', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a renewal at its due time, and with it every renewal whose window has opened', () => {
    const scheduler = new RenewalScheduler();
    const now = performance.now();
    const ran: string[] = [];
    scheduler.schedule(now + 50, 30, () => ran.push('a'));
    scheduler.schedule(now + 70, 30, () => ran.push('b'));
    scheduler.schedule(now + 200, 30, () => ran.push('c'));
    vi.advanceTimersByTime(49);
    expect(ran).toEqual([]);
    vi.advanceTimersByTime(1);
    // b was due at 70 but may run from 40 on: it shares a's turn (and a backend's batch).
    expect(ran).toEqual(['a', 'b']);
    vi.advanceTimersByTime(149);
    expect(ran).toEqual(['a', 'b']);
    vi.advanceTimersByTime(1);
    expect(ran).toEqual(['a', 'b', 'c']);
  });

  it('keeps one timer whatever the number of renewals, and skips cancelled ones', () => {
    const scheduler = new RenewalScheduler();
    const now = performance.now();
    let runs = 0;
    const tickets = Array.from({ length: 1_000 }, (_, i) => scheduler.schedule(now + 100 + i, 0, () => (runs += 1)));
    expect(vi.getTimerCount()).toBe(1);
    for (const ticket of tickets.slice(0, 500)) ticket.cancel();
    vi.advanceTimersByTime(1_100);
    expect(runs).toBe(500);
    expect(scheduler.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('drops cancelled renewals once they are the majority, and still runs the others', () => {
    const scheduler = new RenewalScheduler();
    const now = performance.now();
    let runs = 0;
    const tickets = Array.from({ length: 200 }, (_, i) => scheduler.schedule(now + 1_000 + i, 0, () => (runs += 1)));
    // A loop of short holds: renewals cancelled long before they are due must not pile up.
    for (const ticket of tickets.slice(0, 150)) ticket.cancel();
    // Without compaction all 200 would stay until due; with it, cancelled ones never outnumber the live 50 by much.
    expect(scheduler.size).toBeLessThanOrEqual(100);
    vi.advanceTimersByTime(1_300);
    expect(runs).toBe(50);
    expect(scheduler.size).toBe(0);
  });

  it('re-arms for an earlier renewal scheduled later, and clear() drops everything', () => {
    const scheduler = new RenewalScheduler();
    const now = performance.now();
    const ran: string[] = [];
    scheduler.schedule(now + 500, 0, () => ran.push('late'));
    scheduler.schedule(now + 10, 0, () => ran.push('early'));
    vi.advanceTimersByTime(10);
    expect(ran).toEqual(['early']);
    scheduler.clear();
    vi.advanceTimersByTime(1_000);
    expect(ran).toEqual(['early']);
    expect(vi.getTimerCount()).toBe(0);
  });
});
