import { MemoryLockProvider, type LockCapabilities } from '@fencelock/core';
import { renderGuaranteesTable } from '@fencelock/core/adapter';
import { ETCD_CAPABILITIES } from '@fencelock/etcd';
import { POSTGRES_CAPABILITIES } from '@fencelock/postgres';
import { REDIS_CAPABILITIES } from '@fencelock/redis';
import { REDLOCK_CAPABILITIES } from '@fencelock/redlock';
import { ZOOKEEPER_CAPABILITIES } from '@fencelock/zookeeper';

/** Every provider the project ships, with the capabilities it reports (read from code, never typed here). */
export function shippedProviders(): { name: string; capabilities: LockCapabilities }[] {
  return [
    { name: '`@fencelock/core` memory', capabilities: new MemoryLockProvider().capabilities },
    { name: '`@fencelock/redis`', capabilities: REDIS_CAPABILITIES },
    { name: '`@fencelock/redlock`', capabilities: REDLOCK_CAPABILITIES },
    { name: '`@fencelock/zookeeper`', capabilities: ZOOKEEPER_CAPABILITIES },
    { name: '`@fencelock/etcd`', capabilities: ETCD_CAPABILITIES },
    { name: '`@fencelock/postgres`', capabilities: POSTGRES_CAPABILITIES },
  ];
}

const START = '<!-- guarantees:start -->';
const END = '<!-- guarantees:end -->';

/** Replaces the generated block between the guarantees markers of a Markdown document. */
export function withGuaranteesTable(markdown: string, table: string): string {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start === -1 || end < start) throw new Error(`the document has no ${START} … ${END} block`);
  return `${markdown.slice(0, start + START.length)}\n${table}\n${markdown.slice(end)}`;
}

/** The table as it should stand in the README. */
export function guaranteesTable(): string {
  return renderGuaranteesTable(shippedProviders());
}
