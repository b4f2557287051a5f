/**
 * The conformance suite through node-redis 6 (RESP3, its default) and node-redis 5 (RESP2, its
 * default), each on the single server and on the cluster. The other protocol of each major is
 * checked by redis-shared's client-seam test and by the mixed-clients test.
 */
import { CLIENT_FLAVOURS } from './clients.js';
import { onSingleServer, onTheCluster } from './conformance-through.js';

for (const flavour of [CLIENT_FLAVOURS.nodeRedis6Resp3, CLIENT_FLAVOURS.nodeRedis5Resp2]) {
  onSingleServer(flavour);
  onTheCluster(flavour);
}
