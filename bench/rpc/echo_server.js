// The Node peer for bench/rpc: the same two methods `ferry serve` answers in the benchmark
// (initialize, ferry/ping echoing params.payload), on vscode-jsonrpc over stdio with LSP framing.
'use strict';
const rpc = require('vscode-jsonrpc/node');

const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(process.stdin),
  new rpc.StreamMessageWriter(process.stdout));

connection.onRequest('initialize', () => ({ serverInfo: { name: 'node-echo', version: '0' }, capabilities: {} }));
connection.onRequest('ferry/ping', (params) => {
  const result = {};
  if (params && params.payload !== undefined) result.payload = params.payload;
  return result;
});
connection.onRequest('shutdown', () => null);
connection.onNotification('exit', () => process.exit(0));
connection.onClose(() => process.exit(0));
connection.listen();
