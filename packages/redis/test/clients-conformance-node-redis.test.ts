/**
 * The conformance suite through node-redis 6 (RESP3, its default), the family's first client, and
 * its seam cases through node-redis 5 (RESP2, its default; see seam-cases.ts), each on the single
 * server and on the cluster. The other protocol of each major is checked by the client-seam test and
 * by the mixed-clients test.
 */
import { CLIENT_FLAVOURS } from './clients.js';
import { onSingleServer, onTheCluster } from './conformance-through.js';

onSingleServer(CLIENT_FLAVOURS.nodeRedis6Resp3);
onTheCluster(CLIENT_FLAVOURS.nodeRedis6Resp3);
onSingleServer(CLIENT_FLAVOURS.nodeRedis5Resp2, 'seam cases');
onTheCluster(CLIENT_FLAVOURS.nodeRedis5Resp2, 'seam cases');
