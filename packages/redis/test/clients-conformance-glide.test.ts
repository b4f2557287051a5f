/**
 * The conformance suite through Valkey GLIDE 2 (RESP3, its default), on the single server and on the
 * cluster. RESP2 is checked by redis-shared's client-seam test.
 */
import { CLIENT_FLAVOURS } from './clients.js';
import { onSingleServer, onTheCluster } from './conformance-through.js';

onSingleServer(CLIENT_FLAVOURS.glideResp3);
onTheCluster(CLIENT_FLAVOURS.glideResp3);
