// What the Runs and Tunnels views show for each item. Pure (extension.ts makes the TreeItems).
import { posix } from 'node:path';

const { basename } = posix;  // argv is the box's (Linux) command line, whatever this OS is
import type { ProjectRunInfo as RunInfo, Tunnel } from './rpc';

export function duration(fromIso: string, to: Date): string {
  const ms = to.getTime() - new Date(fromIso).getTime();
  if (!Number.isFinite(ms) || ms < 0) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// A step of a Slurm allocation (`srun --jobid=12 ... -- python3 x.py`): the job and the program's argv.
function allocationStep(argv: string[]): { job: string; argv: string[] } | undefined {
  if (argv[0] !== 'srun' || !argv[1]?.startsWith('--jobid=')) return undefined;
  const dashes = argv.indexOf('--');
  return dashes > 0 && dashes + 1 < argv.length ? { job: argv[1].slice(8), argv: argv.slice(dashes + 1) } : undefined;
}

// Where a Slurm job stands: "job 12 PENDING (Priority, 2 ahead)", "job 12 RUNNING on n1, 58:40 left";
// a step of an allocation: "allocation 12". Empty for any other run.
export function slurmWords(r: RunInfo): string {
  const step = allocationStep(r.argv);
  if (step) return `allocation ${step.job}`;
  if (!r.slurmJob) return '';
  const s = r.slurmState;
  if (!s) return `job ${r.slurmJob}`;
  let words = s.state;
  if (s.state === 'PENDING') {
    const inside = [s.reason && s.reason !== 'None' ? s.reason : '', typeof s.ahead === 'number' ? `${s.ahead} ahead` : '']
      .filter(Boolean).join(', ');
    if (inside) words += ` (${inside})`;
  }
  if (s.state === 'RUNNING' && s.nodes) words += ` on ${s.nodes}`;
  if (s.state === 'RUNNING' && s.timeLeft && !['UNLIMITED', 'INVALID'].includes(s.timeLeft)) words += `, ${s.timeLeft} left`;
  return `job ${r.slurmJob} ${words}`;
}

// The command without the interpreter: `python3 main.py 5` shows as `main.py 5`.
// A debug run (`python3 -m debugpy --listen H:P --wait-for-client script.py 5`) as `script.py 5 (debug)`.
// A step of a Slurm allocation as the program it runs.
export function runCommand(r: RunInfo): string {
  let argv = [...(allocationStep(r.argv)?.argv ?? r.argv)];
  if (argv.length > 1 && /(^|\/)python[0-9.]*$/.test(argv[0])) argv.shift();
  const debugpy = argv[0] === '-m' && argv[1] === 'debugpy';
  if (debugpy) {
    let i = 2;
    while (i < argv.length && argv[i].startsWith('--')) i += ['--listen', '--connect', '--log-to', '--configure-subProcess'].includes(argv[i]) ? 2 : 1;
    argv = [...argv.slice(i), '(debug)'];
  }
  return argv.map((a, i) => (i === 0 && a.startsWith('/') ? basename(a) : a)).join(' ');
}

export interface RunRow {
  label: string;
  description: string;
  tooltip: string;
  contextValue: 'run-running' | 'run-exited' | 'run-lost';
  icon: 'running' | 'ok' | 'failed' | 'lost';
}

export function runRow(r: RunInfo, now: Date): RunRow {
  const took = duration(r.startedAt, r.endedAt ? new Date(r.endedAt) : now);
  let state: string;
  let icon: RunRow['icon'];
  if (r.state === 'running') {
    state = r.followed === false ? 'running, nobody following' : 'running';
    icon = 'running';
  } else if (r.state === 'lost') {
    state = 'lost';
    icon = 'lost';
  } else if (r.signal !== undefined) {
    state = `signal ${r.signal}`;
    icon = 'failed';
  } else {
    state = `exit ${r.exitCode ?? '?'}`;
    icon = r.exitCode === 0 ? 'ok' : 'failed';
  }
  return {
    label: runCommand(r),
    description: [r.project ?? '', state, slurmWords(r), took].filter(Boolean).join(' · '),
    tooltip: [`${r.id}`, `${r.argv.join(' ')}`, `cwd ${r.cwd}`, `started ${r.startedAt}`, r.endedAt ? `ended ${r.endedAt}` : 'running']
      .join('\n'),
    contextValue: r.state === 'running' ? 'run-running' : r.state === 'lost' ? 'run-lost' : 'run-exited',
    icon,
  };
}

export interface TunnelRow {
  label: string;
  description: string;
  tooltip: string;
  contextValue: 'tunnel-local' | 'tunnel-reverse';
}

export function tunnelRow(t: Tunnel): TunnelRow {
  const local = t.kind === 'local';
  const label = local ? `${t.name ? t.name + ' ' : ''}127.0.0.1:${t.localPort} → box ${t.remoteHost ?? 'localhost'}:${t.remotePort}`
    : `${t.name ? t.name + ' ' : ''}box :${t.remotePort} → ${t.localHost ?? '127.0.0.1'}:${t.localPort}`;
  const description = [t.state, t.live ? `${t.live} live` : ''].filter(Boolean).join(' · ');
  return {
    label,
    description,
    tooltip: [t.description ?? label, `accepted ${t.accepted ?? 0}, live ${t.live ?? 0}`, t.error ?? ''].filter(Boolean).join('\n'),
    contextValue: local ? 'tunnel-local' : 'tunnel-reverse',
  };
}
