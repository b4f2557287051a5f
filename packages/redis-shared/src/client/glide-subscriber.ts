import { DEFAULT_RETRY, retryCall } from '@fencelock/core/adapter';
import type { SubscriberConnection, SubscriberHandlers, Subscriptions } from './lock-client.js';

/** A GLIDE pub/sub message (strings: the default decoder). */
interface GlideMessage {
  readonly channel: unknown;
  readonly message: unknown;
  readonly pattern?: unknown;
}

/** What is read of the user's GLIDE client to make a subscriber like it. */
interface GlideSource {
  readonly config?: object;
  readonly constructor: unknown;
}

interface GlideClass {
  createClient(configuration: object): Promise<{ close(): void }>;
}

// GLIDE's `PubSubChannelModes` (standalone) and `ClusterChannelModes` alike: 0 exact, 1 pattern.
const EXACT = 0;
const PATTERN = 1;
// GLIDE's `ProtocolVersion.RESP3`: GLIDE subscribes only under RESP3 (a RESP2 configuration is
// refused), so the subscriber speaks RESP3 whatever the user's client speaks.
const RESP3 = 0;

// Creating the subscriber client while the server is unreachable: tried again with backoff, this
// many times at most; meanwhile (and if it never comes) waiters poll.
const CREATE_ATTEMPTS = 60;

/**
 * A subscriber for a GLIDE client: a client of its own, of the same class and configuration as the
 * user's (GLIDE keeps it as `config`), with the subscriptions in its configuration — GLIDE subscribes
 * when it connects and again after each reconnect, by itself — and a callback for the messages. The
 * seam creates it and closes it; the user's client is never subscribed.
 *
 * GLIDE says nothing when the subscriber's connection drops and comes back: `confirmed` is called
 * once, when the client is created, and `lost` never. Messages published meanwhile are missed, and
 * waiters find the free lock by polling, within one backoff delay.
 */
export function glideSubscriber(client: GlideSource, to: Subscriptions, handlers: SubscriberHandlers): SubscriberConnection {
  // The user's client's class: a `GlideClusterClient` makes a cluster subscriber.
  const Glide = client.constructor as GlideClass;
  let closed = false;
  let subscriber: { close(): void } | undefined;
  const configuration = {
    ...client.config,
    protocol: RESP3,
    pubsubSubscriptions: {
      channelsAndPatterns: { [EXACT]: new Set(to.channels), [PATTERN]: new Set(to.patterns ?? []) },
      callback: (message: GlideMessage) => {
        if (closed) return;
        const pattern = message.pattern === undefined || message.pattern === null ? undefined : String(message.pattern);
        handlers.message(String(message.channel), String(message.message), pattern);
      },
    },
  };
  void retryCall(() => Glide.createClient(configuration), { attempts: CREATE_ATTEMPTS, retry: DEFAULT_RETRY, proceed: () => !closed }).then((created) => {
    if (created === undefined) return;
    if (closed) {
      created.value.close();
      return;
    }
    subscriber = created.value;
    handlers.confirmed();
  });
  return {
    close: () => {
      closed = true;
      subscriber?.close();
      subscriber = undefined;
    },
  };
}
