/**
 * The conformance suite's seam cases through ioredis 6 (RESP3, its default), single server and
 * cluster (see seam-cases.ts). ioredis 5, the family's first client, runs the whole suite in
 * conformance.test.ts. ioredis 6 under RESP2 and iovalkey (an ioredis fork) share ioredis' seam:
 * what differs for them (the protocol, the package) is checked by the client-seam test and by the
 * mixed-clients test.
 */
import { CLIENT_FLAVOURS } from './clients.js';
import { onSingleServer, onTheCluster } from './conformance-through.js';

onSingleServer(CLIENT_FLAVOURS.ioredis6Resp3, 'seam cases');
onTheCluster(CLIENT_FLAVOURS.ioredis6Resp3, 'seam cases');
