import { processIo } from './cli-io.js';
import { runCli } from './run-cli.js';

// Exit as soon as the status is known: a client library's reconnect timer must not keep a
// finished `fencelock` alive (the provider was closed, or given up on after a bounded wait).
const status = await runCli(process.argv.slice(2), processIo());
process.exit(status);
