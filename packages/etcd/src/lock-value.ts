import type { LockMode } from '@fencelock/core';

/**
 * What fencelock stores as the value of a waiter key. etcd's own Mutex stores an empty value and
 * never reads values, so a richer value does not disturb it. Any key whose value is not ours (a Go
 * Mutex, `etcdctl lock`, a plain `etcdctl put`) counts as an EXCLUSIVE holder: foreign mutex
 * holders still exclude our readers and writers alike.
 */
export interface LockValue {
  readonly ownerId: string;
  readonly mode: LockMode;
  readonly metadata: string | undefined;
}

// A marker field, so a foreign JSON value is not mistaken for one of ours.
const MARK = 'fencelock';

/** Serialises a waiter's value. */
export function encodeLockValue(value: LockValue): Buffer {
  const body: Record<string, unknown> = { [MARK]: 1, owner: value.ownerId, mode: value.mode };
  if (value.metadata !== undefined) body['metadata'] = value.metadata;
  return Buffer.from(JSON.stringify(body), 'utf8');
}

/** Parses a waiter's value; `undefined` when it is not one of ours (a foreign, exclusive holder). */
export function decodeLockValue(raw: Buffer | undefined): LockValue | undefined {
  if (raw === undefined || raw.length === 0 || raw[0] !== 0x7b /* '{' */) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const body = parsed as Record<string, unknown>;
    if (body[MARK] !== 1 || typeof body['owner'] !== 'string') return undefined;
    const mode: LockMode = body['mode'] === 'shared' ? 'shared' : 'exclusive';
    const metadata = typeof body['metadata'] === 'string' ? body['metadata'] : undefined;
    return { ownerId: body['owner'], mode, metadata };
  } catch {
    return undefined;
  }
}

/** True when a waiter with this raw value is a reader (only our own shared waiters are). */
export function isReader(raw: Buffer | undefined): boolean {
  return decodeLockValue(raw)?.mode === 'shared';
}

/**
 * What fencelock stores as the value of a semaphore contender's key: besides the owner, the limit it
 * agreed to (a later contender with another limit refuses itself on reading it) and the permits it
 * takes (what later contenders add up).
 */
export interface SemaphoreValue {
  readonly ownerId: string;
  readonly limit: number;
  readonly permits: number;
  readonly metadata: string | undefined;
}

/** Serialises a semaphore contender's value. */
export function encodeSemaphoreValue(value: SemaphoreValue): Buffer {
  const body: Record<string, unknown> = { [MARK]: 1, owner: value.ownerId, mode: 'semaphore', limit: value.limit, permits: value.permits };
  if (value.metadata !== undefined) body['metadata'] = value.metadata;
  return Buffer.from(JSON.stringify(body), 'utf8');
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;

/**
 * Parses a semaphore contender's value; `undefined` when it is not one of ours (written by another
 * tool), which the semaphore counts as taking every permit.
 */
export function decodeSemaphoreValue(raw: Buffer | undefined): SemaphoreValue | undefined {
  if (raw === undefined || raw.length === 0 || raw[0] !== 0x7b /* '{' */) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const body = parsed as Record<string, unknown>;
    const { limit, permits } = body;
    if (body[MARK] !== 1 || typeof body['owner'] !== 'string' || body['mode'] !== 'semaphore') return undefined;
    if (!isCount(limit) || !isCount(permits) || permits > limit) return undefined;
    const metadata = typeof body['metadata'] === 'string' ? body['metadata'] : undefined;
    return { ownerId: body['owner'], limit, permits, metadata };
  } catch {
    return undefined;
  }
}
