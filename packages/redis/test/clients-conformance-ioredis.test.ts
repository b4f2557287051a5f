/**
 * The conformance suite through ioredis 6 (RESP3, its default), single server and cluster. ioredis 5
 * runs it in conformance.test.ts. ioredis 6 under RESP2 and iovalkey (an ioredis fork) share ioredis'
 * seam: what differs for them (the protocol, the package) is checked by redis-shared's client-seam
 * test and by the mixed-clients test, not by the whole suite again.
 */
import { CLIENT_FLAVOURS } from './clients.js';
import { onSingleServer, onTheCluster } from './conformance-through.js';

onSingleServer(CLIENT_FLAVOURS.ioredis6Resp3);
onTheCluster(CLIENT_FLAVOURS.ioredis6Resp3);
