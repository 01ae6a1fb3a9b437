import type { Commands, Notifications, Requests, RunInfo, ServerRequests } from './wire';

// The helper as the extension's logic sees it: requests, notifications and the server's own
// requests. extension.ts adapts vscode-languageclient's LanguageClient to it; the integration test
// adapts a bare vscode-jsonrpc connection; unit tests use a fake.
export interface Disposable {
  dispose(): void;
}

export interface Rpc {
  request<R = unknown>(method: string, params?: unknown): Promise<R>;
  notify(method: string, params?: unknown): void;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onRequest(method: string, handler: (params: any) => unknown | Promise<unknown>): Disposable;
}

// A JSON-RPC error as vscode-jsonrpc raises it ({code, message, data}).
export interface RpcError {
  code?: number;
  message: string;
  data?: any;
}

export function errorMessage(e: unknown): string {
  if (e && typeof e === 'object' && 'message' in e) return String((e as RpcError).message);
  return String(e);
}

export function errorCode(e: unknown): number | undefined {
  if (e && typeof e === 'object' && 'code' in e && typeof (e as RpcError).code === 'number') return (e as RpcError).code;
  return undefined;
}

// ferry's error codes the extension treats specially (protocol/spec/protocol.md).
export const ErrorCodes = {
  ProjectNotFound: -32099,
  ProjectInvalid: -32098,
  AgentUnavailable: -32097,
  DebugpyMissing: -32090,
  RequestCancelled: -32800,
} as const;

// The wire's shapes, generated from protocol/spec/ide-wire.schema.json (scripts/gen_wire_ts.py).
export * from './wire';

// A run as the Runs view lists it: in a window of several projects, with the project's name.
export type ProjectRunInfo = RunInfo & { project?: string };

// A request the helper serves, typed by the wire's method table.
export function call<M extends keyof Requests>(rpc: Rpc, method: M, params: Requests[M]['params']): Promise<Requests[M]['result']> {
  return rpc.request<Requests[M]['result']>(method, params);
}

// A notification from the helper, typed by the wire's table.
export function listen<M extends keyof Notifications>(rpc: Rpc, method: M, handler: (params: Notifications[M]) => void): Disposable {
  return rpc.onNotification(method, handler);
}

// The helper's own requests to the extension, typed by the wire's table.
export function answer<M extends keyof ServerRequests>(
  rpc: Rpc,
  method: M,
  handler: (params: ServerRequests[M]['params']) => ServerRequests[M]['result'] | Promise<ServerRequests[M]['result']>,
): Disposable {
  return rpc.onRequest(method, handler);
}

// workspace/executeCommand of one of the helper's commands (ferry.run, ferry.debug, ...).
export function executeCommand<C extends keyof Commands>(rpc: Rpc, command: C, ...args: unknown[]): Promise<Commands[C]> {
  return rpc.request<Commands[C]>('workspace/executeCommand', { command, arguments: args });
}
