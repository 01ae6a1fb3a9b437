import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FerryController, attachConfiguration } from '../../src/controller';
import { FakeHost, FakeRpc, pythonFile, settle } from '../fakes';
import type { DebugPrepared } from '../../src/rpc';

const project = {
  root: '/work/proj', name: 'proj', host: 'gpu-box', mappings: [{ local: '.', remote: '~/proj' }],
  launch: [
    { name: 'hello', kind: 'run', script: 'hello.py' },
    { name: 'loop', kind: 'debug', script: 'debug/loop.py', args: ['5'] },
    { name: 'quick', kind: 'train', config: 'train/quick.json' },
  ],
};
const prepared: DebugPrepared = {
  runId: 'dbg1', localPort: 40123,
  configuration: { name: 'ferry: attach (proj)', type: 'debugpy', request: 'attach', connect: { host: '127.0.0.1', port: 40123 },
    pathMappings: [{ localRoot: '/work/proj', remoteRoot: '/home/u/proj' }], justMyCode: true },
};

function setup() {
  const rpc = new FakeRpc();
  const host = new FakeHost();
  const events = { status: 0, runs: 0, tunnels: 0 };
  const ferry = new FerryController(rpc, host, {
    statusChanged: () => events.status++, runsChanged: () => events.runs++, tunnelsChanged: () => events.tunnels++,
  });
  ferry.listen();
  rpc.answers.set('project/load', project);
  rpc.answers.set('host/connect', { host: 'gpu-box', agentVersion: '0.1.0', remoteRoot: '/home/u/proj', os: 'Linux', arch: 'x86_64' });
  rpc.answers.set('sync/status', { pendingSaves: [], saving: false, busy: false, lastSync: null });
  return { rpc, host, ferry, events };
}

test('start loads the workspace project and connects its host', async () => {
  const { rpc, host, ferry } = setup();
  rpc.emit('host/stateChanged', { state: 'connecting', host: 'gpu-box', message: 'u@10.0.0.5:22' });
  await ferry.start();
  assert.deepEqual(rpc.sent('project/load'), [{ path: '/work/proj' }]);
  assert.deepEqual(rpc.sent('host/connect'), [{ path: '/work/proj' }]);
  assert.equal(ferry.status.render().text, '$(cloud) gpu-box: connected');
  assert.equal(host.context.get('ferry.active'), true);
});

test('no ferry.json: the status says so and nothing connects', async () => {
  const { rpc, host, ferry } = setup();
  rpc.answers.set('project/load', { code: -32099, message: 'no ferry.json in /work/proj or its parents' });
  await ferry.start();
  assert.equal(ferry.status.state, 'noProject');
  assert.equal(rpc.sent('host/connect').length, 0);
  assert.equal(host.context.get('ferry.active'), false);
});

test('a host that cannot be reached: offline, with Retry and Doctor', async () => {
  const { rpc, host, ferry } = setup();
  let calls = 0;
  rpc.answers.set('host/connect', () => {
    calls++;
    return calls === 1 ? { code: -32097, message: 'connect to 10.0.0.5:22 refused' }
      : { host: 'gpu-box', agentVersion: '0.1.0', remoteRoot: '/r', os: 'Linux', arch: 'x86_64' };
  });
  host.answers.push('Retry');
  await ferry.start();
  assert.match(host.messages[0].text, /cannot reach gpu-box: connect to 10.0.0.5:22 refused/);
  assert.equal(ferry.status.state, 'connected');
});

test('Run Current File saves the file, runs it through ferry.run and shows it in a terminal', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  const file = pythonFile('/work/proj/main.py', true);
  host.file = file;
  rpc.answers.set('workspace/executeCommand:ferry.run', { id: 'run1', argv: ['python3', 'main.py'], cwd: '.' });
  const id = await ferry.runCurrentFile();
  assert.equal(id, 'run1');
  assert.equal(file.saves, 1);
  assert.deepEqual(rpc.commands()[0], { command: 'ferry.run', arguments: [{ uri: 'file:///work/proj/main.py', args: [] }] });
  rpc.emit('run/output', { id: 'run1', stream: 'stdout', offset: 0, text: 'on the box\n' });
  rpc.emit('run/exited', { id: 'run1', status: 0, exitCode: 0 });
  const t = host.terminal('ferry: main.py on gpu-box');
  assert.match(t.text, /on the box\r\n.*exited with status 0/s);
});

test('a run with a terminal gets a tty on the box, and keys and sizes go through untouched', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  host.file = pythonFile('/work/proj/pdb_me.py');
  rpc.answers.set('workspace/executeCommand:ferry.run', { id: 'tty1' });
  rpc.answers.set('run/input', {});
  rpc.answers.set('run/resize', {});
  assert.equal(await ferry.runCurrentFile([], true), 'tty1');
  assert.deepEqual(rpc.commands()[0], { command: 'ferry.run', arguments: [{ uri: 'file:///work/proj/pdb_me.py', args: [], tty: true }] });
  const t = host.terminal('ferry: pdb_me.py on gpu-box');
  t.type('n\r');       // no local echo or line editing: the box's pty does both
  t.type('\x03');      // Ctrl-C is a byte for the pty, not a run/signal
  t.handlers.onResize?.(120, 40);
  assert.deepEqual(rpc.sent('run/input'), [{ id: 'tty1', text: 'n\r' }, { id: 'tty1', text: '\x03' }]);
  assert.deepEqual(rpc.sent('run/resize'), [{ id: 'tty1', cols: 120, rows: 40 }]);
  assert.equal(rpc.sent('run/signal').length, 0);
  assert.equal(t.text, '');
});

test('Stop interrupts the run in front', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  host.file = pythonFile('/work/proj/main.py');
  rpc.answers.set('workspace/executeCommand:ferry.run', { id: 'run2' });
  rpc.answers.set('run/signal', {});
  await ferry.runCurrentFile();
  await ferry.stop();
  assert.deepEqual(rpc.sent('run/signal'), [{ id: 'run2', signal: 'INT' }]);
});

test('a run error is shown with what was attempted', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  host.file = pythonFile('/elsewhere/x.py');
  rpc.answers.set('workspace/executeCommand:ferry.run', { code: -32602, message: 'ferry.run: /elsewhere/x.py is not inside the mapping /work/proj' });
  await ferry.runCurrentFile();
  assert.equal(host.messages.at(-1)?.text, 'ferry: running x.py: ferry.run: /elsewhere/x.py is not inside the mapping /work/proj');
});

test('Debug Current File starts a debug session with debug/prepare\'s configuration', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  host.file = pythonFile('/work/proj/debug/loop.py');
  rpc.answers.set('workspace/executeCommand:ferry.debug', prepared);
  host.settings.set('debugPort', 5690);
  assert.equal(await ferry.debugCurrentFile(), true);
  assert.deepEqual(rpc.commands()[0].arguments, [{ uri: 'file:///work/proj/debug/loop.py', port: 5690 }]);
  const started = host.debugStarts[0];
  assert.equal(started.configuration.type, 'ferry', 'without the Python Debugger extension: ferry\'s own type');
  assert.deepEqual(started.configuration.connect, { host: '127.0.0.1', port: 40123 });
  assert.deepEqual(started.configuration.pathMappings, prepared.configuration.pathMappings);
  assert.equal(started.configuration.request, 'attach');
  assert.ok(host.terminals.find((t) => t.name === 'ferry debug: loop.py on gpu-box'), 'the debuggee\'s output has a terminal');
  assert.equal(attachConfiguration(prepared, true).type, 'debugpy');
});

test('debugpy missing on the box: the install advice is shown', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  host.file = pythonFile('/work/proj/main.py');
  rpc.answers.set('workspace/executeCommand:ferry.debug',
    { code: -32090, message: 'debugpy is not importable by python3 on gpu-box', data: { install: 'python3 -m pip install debugpy' } });
  assert.equal(await ferry.debugCurrentFile(), false);
  assert.match(host.messages.at(-1)!.text, /not importable.*\(python3 -m pip install debugpy\)/);
});

test('F5 on a ferry launch configuration: prepared through ferry.debug, a launch entry by name', async () => {
  const { rpc, ferry } = setup();
  await ferry.start();
  rpc.answers.set('workspace/executeCommand:ferry.debug', prepared);
  const attach = await ferry.resolveLaunchConfiguration({ type: 'ferry', request: 'launch', name: 'F5 loop', launch: 'loop' });
  assert.deepEqual(rpc.commands()[0].arguments, [{ uri: 'file:///work/proj/ferry.json', launch: 'loop' }]);
  assert.equal(attach?.name, 'F5 loop');
  assert.equal(attach?.request, 'attach');
  const byFile = await ferry.resolveLaunchConfiguration({ type: 'ferry', request: 'launch', name: 'f', program: '/work/proj/a.py', args: ['1'] });
  assert.deepEqual(rpc.commands()[1].arguments, [{ uri: 'file:///work/proj/a.py', args: ['1'] }]);
  assert.equal(byFile?.type, 'ferry');
});

test('Run Launch Entry picks from ferry.json and starts by kind', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  rpc.answers.set('workspace/executeCommand:ferry.run', { id: 'r-hello' });
  host.answers.push('hello');
  await ferry.runLaunchEntry();
  assert.deepEqual(rpc.commands().at(-1), { command: 'ferry.run', arguments: [{ uri: 'file:///work/proj/ferry.json', launch: 'hello' }] });
  assert.ok(host.terminals.find((t) => t.name === 'ferry: hello on gpu-box'));
  rpc.answers.set('workspace/executeCommand:ferry.train', { runId: 't1' });
  host.answers.push('quick');
  await ferry.runLaunchEntry();
  assert.deepEqual(rpc.commands().at(-1), { command: 'ferry.train', arguments: [{ uri: 'file:///work/proj/ferry.json', launch: 'quick' }] });
  assert.equal(host.panels[0].title, 'Training quick');
});

test('the helper\'s questions: host key, passphrase, mass delete', async () => {
  const { rpc, host } = setup();
  host.answers.push('Trust and connect', undefined, 'secret', undefined);
  assert.deepEqual(await rpc.ask('host/confirmHostKey', { host: 'gpu-box', keyType: 'ssh-ed25519', fingerprint: 'SHA256:abc' }), { accept: true });
  assert.match(host.asked[0], /SHA256:abc/);
  assert.deepEqual(await rpc.ask('host/confirmHostKey', { host: 'gpu-box', keyType: 'ssh-ed25519', fingerprint: 'SHA256:abc' }), { accept: false });
  assert.deepEqual(await rpc.ask('host/passphrase', { keyFile: '/k' }), { passphrase: 'secret' });
  assert.deepEqual(await rpc.ask('host/passphrase', { keyFile: '/k' }), {});
  host.answers.push('Delete 150 files');
  assert.deepEqual(await rpc.ask('sync/confirmMassDelete', { reason: 'this sync would delete 150 of 600 remote files', count: 150, root: '/p' }),
    { accept: true });
});

test('after a save the status bar follows sync/status until the push is done', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  const states = [
    { pendingSaves: ['main.py'], saving: true, busy: false, lastSync: null },
    { pendingSaves: [], saving: false, busy: false, lastSync: { filesSent: 1, filesDeleted: 0, conflicts: 0 } },
  ];
  rpc.answers.set('sync/status', () => states.shift() ?? { pendingSaves: [], saving: false, busy: false, lastSync: { filesSent: 1, filesDeleted: 0, conflicts: 0 } });
  ferry.fileSaved();
  host.advance(100);
  await settle();
  assert.equal(ferry.status.syncing, true);
  host.advance(200);
  await settle();
  assert.equal(ferry.status.syncing, false);
  assert.equal(ferry.status.lastSync?.summary.filesSent, 1);
  assert.match(ferry.status.render().text, /synced \d\d:\d\d:\d\d/);
});

test('training: metrics feed the chart, the end shows plot.svg, Stop Training sends train/stop', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  host.file = { ...pythonFile('/work/proj/train/quick.json'), languageId: 'json' };
  rpc.answers.set('workspace/executeCommand:ferry.train', { runId: 't9' });
  rpc.answers.set('train/stop', {});
  await ferry.train();
  const panel = host.panels[0];
  rpc.emit('train/metrics', { runId: 't9', event: { event: 'start', step: 0, total_steps: 100 } });
  rpc.emit('train/metrics', { runId: 't9', event: { event: 'step', step: 20, loss: 1.5, samples_per_s: 900, step_time_s: 0.01 } });
  host.advance(200);
  assert.deepEqual(panel.posts.at(-1).loss, [{ step: 20, value: 1.5 }]);
  assert.match(panel.posts.at(-1).summary, /step 20 \/ 100 · loss 1.500/);
  panel.handlers.onMessage({ type: 'stop' });
  await settle();
  assert.deepEqual(rpc.sent('train/stop'), [{ runId: 't9' }]);
  rpc.emit('train/exited', { runId: 't9', exitCode: 130, status: 130, outputs: ['/work/proj/train/runs/quick/plot.svg'] });
  assert.deepEqual(panel.images, ['/work/proj/train/runs/quick/plot.svg']);
  assert.equal(panel.posts.at(-1).ended, true);
  assert.match(host.messages.at(-1)!.text, /training quick.json exited with status 130 \(pulled plot.svg\)/);
});

test('Open Jupyter reuses a tunnel to 8888, else opens one on a free port', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  rpc.answers.set('tunnel/list', { tunnels: [] });
  rpc.answers.set('tunnel/open', (p: any) => ({ id: 3, kind: 'local', localPort: 45000, remotePort: p.remotePort, state: 'active' }));
  await ferry.openNamedTunnel('jupyter');
  assert.deepEqual(rpc.sent('tunnel/open'), [{ name: 'jupyter', remotePort: 8888, localPort: 0 }]);
  rpc.answers.set('tunnel/list', { tunnels: [{ id: 4, kind: 'local', localPort: 6006, remotePort: 6006, state: 'active' }] });
  await ferry.openNamedTunnel('tensorboard');
  assert.equal(rpc.sent('tunnel/open').length, 1);
  assert.deepEqual(host.opened, ['http://127.0.0.1:45000/', 'http://127.0.0.1:6006/']);
});

test("env sync mirrors the box's packages and says which interpreter to select", async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  rpc.answers.set('env/sync', {
    filesTotal: 7861, bytesTotal: 91279995, filesReceived: 7861, leftOut: [{ package: 'triton', bytes: 400e6 }],
    venvPython: '/work/proj/.ferry/venv/bin/python',
  });
  await ferry.envSync();
  assert.equal(rpc.sent('env/sync').length, 1);
  const said = host.messages.at(-1)!.text;
  assert.match(said, /7861 files, 91\.3 MB/);
  assert.match(said, /left out past the size cap: triton/);
  assert.match(said, /select \/work\/proj\/\.ferry\/venv\/bin\/python/);
});

test("a project without a mirror of the box's packages is offered one when it connects, once", async () => {
  const { rpc, host, ferry } = setup();
  host.settings.set('offerEnvMirror', true);  // package.json's default
  rpc.answers.set('env/sync', { filesTotal: 3, bytesTotal: 1000, filesReceived: 3, leftOut: [], venvPython: '/work/proj/.ferry/venv/bin/python' });
  host.answers.push('Mirror Them');
  await ferry.start();
  await ferry.envOffer;
  assert.match(host.messages[0].text, /can see the Python packages on gpu-box/);
  assert.equal(rpc.sent('env/sync').length, 1);
  await ferry.start();  // a reconnect does not ask again
  assert.equal(host.messages.filter((m) => /can see the Python packages/.test(m.text)).length, 1);

  // Don't Ask Again turns the setting off for the workspace; a project that has a mirror is not asked.
  const second = setup();
  second.host.settings.set('offerEnvMirror', true);
  second.host.answers.push("Don't Ask Again");
  await second.ferry.start();
  await second.ferry.envOffer;
  assert.equal(second.host.settings.get('offerEnvMirror'), false);
  assert.equal(second.rpc.sent('env/sync').length, 0);
  const mirrored = setup();
  mirrored.host.settings.set('offerEnvMirror', true);
  mirrored.host.files.add('/work/proj/.ferry/venv');
  await mirrored.ferry.start();
  await mirrored.ferry.envOffer;
  assert.equal(mirrored.host.messages.length, 0);
});

test('a port a run opened on the box redraws the Tunnels view', async () => {
  const { rpc, ferry, events } = setup();
  await ferry.start();
  const before = events.tunnels;
  rpc.emit('tunnel/changed', {});
  assert.equal(events.tunnels, before + 1);
});

test('the menu offers sync, pull, doctor and tunnels', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  rpc.answers.set('workspace/executeCommand:ferry.sync', { filesSent: 3, filesDeleted: 0, conflicts: 0 });
  host.answers.push('$(sync) Sync now');
  await ferry.menu();
  assert.deepEqual(rpc.commands().at(-1), { command: 'ferry.sync', arguments: ['file:///work/proj/ferry.json'] });
  assert.equal(host.messages.at(-1)?.text, 'ferry: synced to gpu-box: 3 sent, 0 deleted, 0 conflicts');
  rpc.answers.set('workspace/executeCommand:ferry.pull', { filesSent: 2, filesDeleted: 0, conflicts: 0 });
  host.answers.push('$(cloud-download) Pull…', 'outputs logs');
  await ferry.menu();
  assert.deepEqual(rpc.commands().at(-1), { command: 'ferry.pull', arguments: ['outputs', 'logs'] });
  rpc.answers.set('workspace/executeCommand:ferry.doctor', { host: 'gpu-box', checks: [
    { check: 'connection', status: 'pass', detail: 'ok', fix: '' }, { check: 'gpu', status: 'warn', detail: 'no nvidia-smi', fix: 'install the driver' }] });
  host.answers.push('$(checklist) Doctor');
  await ferry.menu();
  assert.equal(host.messages.at(-1)?.text, 'ferry doctor: 2 checks on gpu-box, 0 failed, 1 warnings');
  assert.ok(host.logs.includes('  warn gpu: no nvidia-smi (fix: install the driver)'));
});

test('after a helper restart the runs shown are attached again where they stopped', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  host.file = pythonFile('/work/proj/main.py');
  rpc.answers.set('workspace/executeCommand:ferry.run', { id: 'long' });
  rpc.answers.set('run/attach', { id: 'long', offset: 9, state: 'running' });
  await ferry.runCurrentFile();
  rpc.emit('run/output', { id: 'long', stream: 'stdout', offset: 0, text: 'abc\n' });
  await ferry.resume();
  assert.deepEqual(rpc.sent('run/attach'), [{ id: 'long', offset: 9 }]);
  assert.equal(rpc.sent('host/connect').length, 2);
});

test('code lenses: the run gets a terminal, the debug lens a session on the configured port, the train lens a chart', async () => {
  const { host, ferry } = setup();
  await ferry.start();
  host.settings.set('debugPort', 5701);
  assert.deepEqual(ferry.lensArguments('ferry.debug', ['file:///work/proj/main.py']), [{ uri: 'file:///work/proj/main.py', port: 5701 }]);
  assert.deepEqual(ferry.lensArguments('ferry.run', ['file:///work/proj/main.py']), ['file:///work/proj/main.py']);
  await ferry.lensResult('ferry.run', ['file:///work/proj/main.py'], { id: 'lens-run' });
  assert.ok(host.terminals.find((t) => t.name === 'ferry: main.py on gpu-box'));
  await ferry.lensResult('ferry.debug', [{ uri: 'file:///work/proj/main.py', port: 5701 }], prepared);
  assert.equal(host.debugStarts[0].configuration.name, 'ferry: main.py on gpu-box');
  await ferry.lensResult('ferry.train', ['file:///work/proj/train/quick.json'], { runId: 't-lens' });
  assert.equal(host.panels[0].title, 'Training quick.json');
  assert.equal(host.terminals.length, 2, 'a training has a chart, not a terminal');
});

test('Disconnect closes the link and offers Connect again', async () => {
  const { rpc, host, ferry } = setup();
  await ferry.start();
  assert.equal(ferry.status.render().text, '$(cloud) gpu-box: connected');
  rpc.answers.set('host/disconnect', { host: 'gpu-box', disconnected: true });
  host.answers.push('$(debug-disconnect) Disconnect');
  await ferry.menu();
  assert.deepEqual(rpc.sent('host/disconnect'), [{ path: '/work/proj' }]);
  assert.equal(ferry.status.state, 'disconnected');
  host.answers.push('$(debug-restart) Connect');
  await ferry.menu();
  assert.equal(rpc.sent('host/connect').length, 2);
  assert.equal(ferry.status.render().text, '$(cloud) gpu-box: connected');
});

test('the GPU poll asks gpu/status, whose answer carries the price, and the status shows it', async () => {
  const { rpc, ferry } = setup();
  rpc.answers.set('gpu/status', { available: false, reason: 'no NVIDIA GPU visible', usdPerHour: 2.5, runs: [{ id: 'r1', costUsd: 0.42 }] });
  await ferry.start();
  await ferry.pollGpu();
  assert.equal(rpc.sent('gpu/status').length, 1);
  assert.equal(ferry.status.render().text, '$(cloud) gpu-box: connected · $2.50/h · runs $0.42');
});

test('a window of several folders links each project, and the status bar follows the active editor', async () => {
  const { rpc, host, ferry } = setup();
  host.folders = ['/work/a', '/work/b', '/work/notes'];
  const projects: Record<string, object> = {
    '/work/a': { root: '/work/a', name: 'a', host: 'gpu-a', mappings: [] },
    '/work/b': { root: '/work/b', name: 'b', host: 'gpu-b', mappings: [] },
  };
  rpc.answers.set('project/load', (p: { path: string }) => projects[p.path] ?? { code: -32099, message: `no ferry.json above ${p.path}` });
  rpc.answers.set('host/connect', (p: { path: string }) =>
    p.path === '/work/b' ? { code: -32097, message: 'connection refused' } : { host: 'gpu-a', agentVersion: '0.1.0', remoteRoot: '/home/u/a', os: 'Linux', arch: 'x86_64' });
  rpc.answers.set('sync/status', (p: { path: string }) => ({
    pendingSaves: [], saving: false, busy: false,
    lastSync: p.path === '/work/a' ? { filesSent: 3, filesDeleted: 0, conflicts: 0 } : null,
  }));
  rpc.answers.set('run/list', (p: { path: string }) => ({ runs: [{ id: `r-${p.path.slice(-1)}`, argv: ['python3', 'x.py'], cwd: '.', state: 'running', startedAt: '2026-01-02T03:04:05.000Z' }] }));
  rpc.answers.set('run/signal', {});
  rpc.answers.set('gpu/status', { available: false, reason: 'no GPU' });
  host.answers.push(undefined);  // b's "cannot reach": dismissed
  await ferry.start();
  assert.deepEqual(ferry.projects().map((p) => p.name), ['a', 'b']);  // notes has no ferry.json
  assert.deepEqual(rpc.sent('host/connect'), [{ path: '/work/a' }, { path: '/work/b' }]);
  assert.match(host.messages.find((m) => m.level === 'error')!.text, /cannot reach gpu-b \(b\): connection refused/);

  // No file open: the first project. A file of b's in front: b's link and sync.
  assert.match(ferry.status.render().text, /gpu-a \(a\): connected · synced/);
  host.file = pythonFile('/work/b/train.py');
  assert.match(ferry.status.render().text, /gpu-b \(b\): offline/);
  // A state change of a's link goes to a's status, whatever is in front.
  rpc.emit('host/stateChanged', { state: 'reconnecting', host: 'gpu-a', root: '/work/a', attempt: 2 });
  assert.match(ferry.status.render().text, /gpu-b \(b\): offline/);
  host.file = pythonFile('/work/a/sub/m.py');
  assert.match(ferry.status.render().text, /gpu-a \(a\): reconnecting \(2\)/);
  rpc.emit('host/stateChanged', { state: 'connected', host: 'gpu-a', root: '/work/a' });
  await ferry.pollGpu();
  assert.deepEqual(rpc.sent('gpu/status'), [{ path: '/work/a' }]);

  // The Runs view: every connected project's runs, each saying whose; a kill goes to its project.
  const runs = await ferry.listRuns();
  assert.deepEqual(runs.map((r) => [r.id, r.project]), [['r-a', 'a']]);  // b is offline
  await ferry.killRun('r-a', runs[0]);
  assert.deepEqual(rpc.sent('run/signal'), [{ id: 'r-a', signal: 'KILL', path: '/work/a' }]);
});
