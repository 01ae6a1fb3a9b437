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

// The shapes of the methods the extension uses (protocol/spec/protocol.md has all of them).
export interface LaunchEntry {
  name: string;
  kind: 'run' | 'debug' | 'train';
  script?: string;
  module?: string;
  config?: string;
  args?: string[];
}

export interface ProjectInfo {
  root: string;
  name: string;
  host: string;
  mappings: { local: string; remote: string }[];
  launch?: LaunchEntry[];
}

// env/sync's result (protocol/spec/protocol.md), the parts the extension shows.
export interface EnvSyncResult {
  filesTotal: number;
  bytesTotal: number;
  filesReceived: number;
  leftOut: { package: string; bytes: number }[];
  venvPython: string | null;
  venvError?: string;
}

export interface ConnectResult {
  host: string;
  agentVersion: string;
  remoteRoot: string;
  os: string;
  arch: string;
}

export interface HostState {
  state: 'connecting' | 'connected' | 'reconnecting' | 'disconnected';
  host: string;
  root?: string;  // the project whose link it is
  attempt?: number;
  retryInMs?: number;
  message?: string;
}

export interface SyncSummary {
  filesSent: number;
  filesDeleted: number;
  conflicts: number;
  seconds?: number;
  conflictList?: { path: string; kind: string; message: string }[];
  heldDeletes?: string[];
  errors?: string[];
}

export interface SyncStatus {
  pendingSaves: string[];
  saving: boolean;
  busy: boolean;
  connected?: boolean;
  endpoint?: string;
  lastSync: SyncSummary | null;
  lastError?: string;
}

export interface RunOutput {
  id: string;
  stream: 'stdout' | 'stderr';
  offset: number;
  text?: string;
  base64?: string;
}

export interface RunExited {
  id: string;
  status: number;
  exitCode?: number;
  signal?: number;
  endedAt?: string;
  logBytes?: number;
  error?: string;
}

export interface RunStarted {
  id: string;
  pid?: number;
  startedAt?: string;
  argv?: string[];
  cwd?: string;
}

export interface RunInfo {
  id: string;
  argv: string[];
  cwd: string;
  root?: string;
  state: 'running' | 'exited' | 'lost';
  pid?: number;
  startedAt: string;
  endedAt?: string;
  exitCode?: number;
  signal?: number;
  logBytes?: number;
  // A Slurm job (docs/slurm.md) and where it stands, as its follower last saw it.
  slurmJob?: string;
  slurmState?: { state: string; reason?: string; nodes?: string; timeLeft?: string; ahead?: number };
  // Running runs: whether a live ferry follows it; false for one a killed ferry left behind.
  followed?: boolean;
  // Set by the extension in a window of several projects: the project (its name) the run is of.
  project?: string;
}

export interface DebugPrepared {
  runId: string;
  localPort: number;
  configuration: {
    name: string;
    type: string;
    request: string;
    connect: { host: string; port: number };
    pathMappings: { localRoot: string; remoteRoot: string }[];
    justMyCode?: boolean;
  };
}

export interface TrainStarted {
  runId: string;
  argv?: string[];
  cwd?: string;
  host?: string;
}

export interface TrainExited {
  runId: string;
  exitCode?: number;
  signal?: number;
  status?: number;
  outputs?: string[];
  notes?: string[];
  error?: string;
}

export interface Tunnel {
  id: number;
  kind: 'local' | 'reverse';
  name?: string;
  bindAddress?: string;
  localPort: number;
  remoteHost?: string;
  localHost?: string;
  remotePort: number;
  state: 'active' | 'waiting';
  accepted?: number;
  live?: number;
  description?: string;
  error?: string;
}

export interface DoctorCheck {
  check: string;
  status: 'pass' | 'warn' | 'fail';
  detail: string;
  fix: string;
}

export interface GpuStatus {
  available: boolean;
  reason?: string;
  gpus?: { index: number; name?: string; util_percent?: number; mem_used_bytes?: number; mem_total_bytes?: number }[];
  // With ferry.json's `price`: what the host bills, and each running run's cost so far.
  usdPerHour?: number;
  runs?: { id: string; costUsd: number }[];
  // On a Slurm project: its allocation (`ferry alloc`), if one is held, and the seconds it has left.
  slurm?: { allocation?: SlurmAllocation };
}

export interface SlurmAllocation {
  jobId: string;
  state: string;
  reason?: string;
  nodes?: string;
  timeLeft?: string;
  timeLimit?: string;
  secondsLeft?: number;
}

// workspace/executeCommand of one of the helper's commands (ferry.run, ferry.debug, ...).
export function executeCommand<R = unknown>(rpc: Rpc, command: string, ...args: unknown[]): Promise<R> {
  return rpc.request<R>('workspace/executeCommand', { command, arguments: args });
}
