import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TrainingModel, formatEta, summaryLine } from '../../src/training';
import { runCommand, runRow, slurmWords, tunnelRow } from '../../src/views';
import { wireRun, wireTunnel } from '../fakes';

test('the Runs view shows the command without the interpreter, the state and the duration', () => {
  const now = new Date('2026-11-30T02:12:40.000Z');
  const running = wireRun({ id: 'a', argv: ['/usr/bin/python3', 'src/train.py', '--lr', '0.1'], cwd: '.', state: 'running',
    startedAt: '2026-11-30T02:10:11.000Z' });
  assert.equal(runCommand(running), 'src/train.py --lr 0.1');
  assert.deepEqual(
    { ...runRow(running, now), tooltip: undefined },
    { label: 'src/train.py --lr 0.1', description: 'running · 2 min 29 s', contextValue: 'run-running', icon: 'running', tooltip: undefined });
  const failed = { ...running, state: 'exited' as const, endedAt: '2026-11-30T02:10:16.000Z', exitCode: 2 };
  assert.equal(runRow(failed, now).description, 'exit 2 · 5 s');
  assert.equal(runRow(failed, now).icon, 'failed');
  assert.equal(runRow({ ...failed, exitCode: undefined, signal: 9 }, now).description, 'signal 9 · 5 s');
  assert.equal(runRow({ ...running, argv: ['/opt/ferry-train', 'quick.json'] }, now).label, 'ferry-train quick.json');
  // A run a killed ferry left behind says so (run/list's `followed`); an older helper's lists say nothing.
  assert.equal(runRow({ ...running, followed: false }, now).description, 'running, nobody following · 2 min 29 s');
  assert.equal(runRow({ ...running, followed: true }, now).description, 'running · 2 min 29 s');
  // A window of several projects: whose run it is comes first.
  assert.equal(runRow({ ...running, project: 'vision' }, now).description, 'vision · running · 2 min 29 s');
  assert.equal(runCommand({ ...running, argv: ['/usr/bin/python3', '-m', 'debugpy', '--listen', '127.0.0.1:5678', '--wait-for-client',
    'debug_me.py', '5'] }), 'debug_me.py 5 (debug)');
});

test('the Tunnels view names both ends', () => {
  const row = tunnelRow(wireTunnel({ id: 1, kind: 'local', name: 'jupyter', localPort: 41234, remoteHost: 'localhost', remotePort: 8888,
    state: 'active', live: 2 }));
  assert.equal(row.label, 'jupyter 127.0.0.1:41234 → box localhost:8888');
  assert.equal(row.description, 'active · 2 live');
  assert.equal(row.contextValue, 'tunnel-local');
  assert.equal(tunnelRow(wireTunnel({ id: 2, kind: 'reverse', localPort: 5679, remotePort: 5679, state: 'waiting' })).label,
    'box :5679 → 127.0.0.1:5679');
});

test('the training model collects loss, eval loss, throughput and an ETA', () => {
  const m = new TrainingModel();
  m.event({ event: 'start', step: 0, total_steps: 300 });
  m.event({ event: 'step', step: 100, loss: 0.9, samples_per_s: 5000, step_time_s: 0.02 });
  m.event({ event: 'step', step: 200, loss: null, samples_per_s: 5100, step_time_s: 0.02 });
  m.event({ event: 'eval', step: 200, loss: 0.8 });
  assert.deepEqual(m.loss, [{ step: 100, value: 0.9 }]);
  assert.deepEqual(m.evalLoss, [{ step: 200, value: 0.8 }]);
  assert.equal(m.throughput.length, 2);
  assert.equal(m.summary.etaSeconds, 2);
  assert.equal(summaryLine(m.summary), 'step 200 / 300 · loss 0.9000 · eval loss 0.8000 · 5100 samples/s · ETA 2 s');
  m.event({ event: 'done' });
  assert.match(summaryLine(m.summary), /done$/);
  assert.equal(formatEta(3725), '1 h 2 min');
});

test('a Slurm run shows its job and where it stands; a step of an allocation as its program', () => {
  const now = new Date('2026-01-01T00:01:00Z');
  const base = { id: 'r', cwd: '.', startedAt: '2026-01-01T00:00:00Z', root: '/work/proj', pid: 7, logBytes: 0 } as const;
  const pending = { ...base, argv: ['python3', 'train.py'], state: 'running' as const, slurmJob: '12',
    slurmState: { state: 'PENDING', reason: 'Resources' } };
  assert.equal(runRow(pending, now).description, 'running · job 12 PENDING (Resources) · 1 min 0 s');
  const running = { ...pending, slurmState: { state: 'RUNNING', nodes: 'n1', timeLeft: '58:40' } };
  assert.equal(slurmWords(running), 'job 12 RUNNING on n1, 58:40 left');
  assert.equal(slurmWords({ ...pending, slurmState: { state: 'TIMEOUT' } }), 'job 12 TIMEOUT');
  assert.equal(slurmWords({ ...pending, slurmState: { state: 'PENDING', reason: 'Priority', ahead: 2 } }), 'job 12 PENDING (Priority, 2 ahead)');
  assert.equal(slurmWords({ ...pending, slurmState: undefined }), 'job 12');
  const step = { ...base, state: 'running' as const,
    argv: ['srun', '--jobid=7', '--overlap', '--nodes=1', '--ntasks=1', '--unbuffered', '--', '/usr/bin/python3', '-u', 'where.py'] };
  assert.equal(runCommand(step), '-u where.py');
  assert.equal(slurmWords(step), 'allocation 7');
  assert.equal(slurmWords({ ...base, state: 'exited' as const, argv: ['python3', 'x.py'] }), '');
});
