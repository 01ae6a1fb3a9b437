// The status bar item's words: the host's state (host/stateChanged, or the answer to
// host/connect on the local host, which sends no state changes), the last sync, and while
// connected the GPU use and, with ferry.json's `price`, the live cost: the host's rate and what
// its running runs cost so far; on a Slurm cluster the allocation and its time left instead
// (gpu/status). Pure: extension.ts copies render() onto the item.
import type { GpuStatus, HostState, SyncSummary } from './rpc';

export type LinkState = HostState['state'] | 'idle' | 'noProject' | 'helperDown';

export interface StatusView {
  text: string;
  tooltip: string;
  warning: boolean;
}

const icons: Record<LinkState, string> = {
  idle: '$(cloud)',
  noProject: '$(cloud)',
  connecting: '$(sync~spin)',
  connected: '$(cloud)',
  reconnecting: '$(sync~spin)',
  disconnected: '$(debug-disconnect)',
  helperDown: '$(error)',
};

function hhmmss(d: Date): string {
  return d.toTimeString().slice(0, 8);
}

function usd(n: number): string {
  return `$${n.toFixed(2)}`;
}

// Seconds as Slurm writes a time left: 58:40, 1:02:03, 1-00:00:00.
function slurmTime(seconds: number): string {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  if (d > 0) return `${d}-${two(h)}:${two(m)}:${two(s)}`;
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
}

function gib(bytes: number | undefined): string {
  return ((bytes ?? 0) / 2 ** 30).toFixed(1);
}

export class StatusModel {
  state: LinkState = 'idle';
  host = '';
  message = '';
  attempt?: number;
  lastSync?: { at: Date; summary: SyncSummary };
  syncing = false;
  lastError = '';
  gpu?: GpuStatus;
  // project/trust: false until the person trusts the project's ferry.json (docs/security.md).
  untrusted?: { root: string; changed: string[]; warnings: string[] };

  // project/trust from the helper.
  trust(p: { root: string; trusted: boolean; changed?: string[]; warnings?: string[] }): void {
    this.untrusted = p.trusted ? undefined : { root: p.root, changed: p.changed ?? [], warnings: p.warnings ?? [] };
  }

  // The project's name, shown in a window of several projects ('' with one).
  project = '';

  setHost(host: string): void {
    this.host = host;
  }

  hostState(s: HostState): void {
    this.state = s.state;
    this.host = s.host || this.host;
    this.message = s.message ?? '';
    this.attempt = s.attempt;
    if (s.state !== 'connected') this.gpu = undefined;
  }

  set(state: LinkState, message = ''): void {
    this.state = state;
    this.message = message;
    if (state !== 'connected') this.gpu = undefined;
  }

  synced(summary: SyncSummary, at: Date): void {
    this.lastSync = { at, summary };
    this.lastError = '';
  }

  render(): StatusView {
    if (this.untrusted) {
      const why = this.untrusted.changed.length ? `ferry.json changed (${this.untrusted.changed.join(', ')})` : 'not trusted yet';
      return {
        text: '$(shield) ferry: untrusted',
        tooltip: [`ferry does nothing for ${this.untrusted.root}: ${why}.`, ...this.untrusted.warnings.map((w) => `! ${w}`),
          'Click to review and trust it (ferry: Trust Project)'].join('\n'),
        warning: true,
      };
    }
    const host = (this.host || 'ferry') + (this.project ? ` (${this.project})` : '');
    let words: string;
    switch (this.state) {
      case 'noProject': words = 'ferry: no project'; break;
      case 'idle': words = `${host}`; break;
      case 'connecting': words = `${host}: connecting`; break;
      case 'connected': words = `${host}: connected`; break;
      case 'reconnecting': words = `${host}: reconnecting${this.attempt ? ` (${this.attempt})` : ''}`; break;
      case 'disconnected': words = `${host}: offline`; break;
      case 'helperDown': words = 'ferry: helper stopped'; break;
    }
    let text = `${icons[this.state]} ${words}`;
    if (this.state === 'noProject') { /* nothing to sync */ } else if (this.syncing) text += ' $(sync~spin)';
    else if (this.lastSync) text += ` · synced ${hhmmss(this.lastSync.at)}`;
    const gpus = this.state === 'connected' && this.gpu?.available ? this.gpu.gpus ?? [] : [];
    if (gpus.length > 0) {
      const util = Math.round(gpus.reduce((a, g) => a + (g.util_percent ?? 0), 0) / gpus.length);
      const used = gpus.reduce((a, g) => a + (g.mem_used_bytes ?? 0), 0);
      const total = gpus.reduce((a, g) => a + (g.mem_total_bytes ?? 0), 0);
      text += ` · GPU ${util}% ${gib(used)}/${gib(total)} GiB`;
    }
    const priced = this.state === 'connected' && typeof this.gpu?.usdPerHour === 'number';
    const runs = priced ? this.gpu?.runs ?? [] : [];
    if (priced) {
      text += ` · ${usd(this.gpu!.usdPerHour!)}/h`;
      if (runs.length > 0) text += ` · runs ${usd(runs.reduce((a, r) => a + r.costUsd, 0))}`;
    }
    const allocation = this.state === 'connected' ? this.gpu?.slurm?.allocation : undefined;
    const left = allocation?.secondsLeft;
    if (allocation) text += ` · job ${allocation.jobId} on ${allocation.nodes ?? '?'}${typeof left === 'number' ? ` ${slurmTime(left)} left` : ''}`;
    const tips: string[] = [`ferry: ${this.host || 'no host'} is ${this.state === 'disconnected' ? 'offline' : this.state}`];
    if (this.message) tips.push(this.message);
    if (this.lastSync) {
      const s = this.lastSync.summary;
      tips.push(`Last sync ${hhmmss(this.lastSync.at)}: ${s.filesSent} sent, ${s.filesDeleted} deleted, ${s.conflicts} conflicts`);
    }
    if (this.lastError) tips.push(`Last error: ${this.lastError}`);
    for (const g of gpus) tips.push(`GPU ${g.index} ${g.name ?? ''}: ${g.util_percent ?? 0}% · ${gib(g.mem_used_bytes)}/${gib(g.mem_total_bytes)} GiB`);
    if (priced) tips.push(`Host price ${usd(this.gpu!.usdPerHour!)}/h (ferry.json price)`);
    for (const r of runs) tips.push(`Run ${r.id}: ${usd(r.costUsd)} so far`);
    if (allocation) {
      tips.push(`Slurm allocation ${allocation.jobId} on ${allocation.nodes ?? '?'}` +
        (allocation.timeLimit ? ` (time limit ${allocation.timeLimit})` : '') + ': runs, tunnels and Debug go there (ferry alloc --release ends it)');
    } else if (this.state === 'connected' && this.gpu?.slurm) {
      tips.push('Slurm: no allocation; runs are jobs of their own (ferry alloc holds a node)');
    }
    if (this.gpu && !this.gpu.available && this.state === 'connected') tips.push(`No GPU: ${this.gpu.reason ?? 'NVML not available'}`);
    tips.push('Click for Sync now, Pull…, Doctor, Open tunnel…');
    return {
      text,
      tooltip: tips.join('\n'),
      warning: this.state === 'disconnected' || this.state === 'reconnecting' || this.state === 'helperDown' || !!this.lastError ||
        (typeof left === 'number' && left < 600),
    };
  }
}
