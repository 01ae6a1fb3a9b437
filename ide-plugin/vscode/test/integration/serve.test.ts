// The extension's logic against the real helper, without VS Code: `ferry serve` over pipes
// (vscode-jsonrpc, as vscode-languageclient talks to it), a project on the `local` host (the agent
// in a sandbox under a temporary XDG_CACHE_HOME), FerryController with a fake VS Code.
// Lifecycle, a save that reaches the box, a run's output, input and exit status in its terminal.
//   FERRY_BIN (default ../../build/bin/ferry), FERRY_AGENT (default: beside FERRY_BIN)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { FerryController } from '../../src/controller';
import type { Rpc } from '../../src/rpc';
import { FakeHost, pythonFile } from '../fakes';

const ferryBin = resolve(process.env.FERRY_BIN ?? join(__dirname, '..', '..', '..', '..', '..', 'build', 'bin', 'ferry'));
const ferryAgent = resolve(process.env.FERRY_AGENT ?? join(dirname(ferryBin), 'ferry-agent'));

async function waitFor<T>(what: string, probe: () => T | undefined | false, ms = 15000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('the controller against the real ferry serve: lifecycle, save, run', { timeout: 60000 }, async () => {
  assert.ok(existsSync(ferryBin), `${ferryBin} is missing: build it (cmake --build build --target ferry ferry-agent) or set FERRY_BIN`);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-vscode-it-'));
  const project = join(dir, 'proj');
  mkdirSync(project);
  writeFileSync(join(project, 'ferry.json'), JSON.stringify({
    name: 'vscode-it', host: 'local', interpreter: 'python3', mappings: [{ local: '.', remote: '~/proj' }],
  }, null, 2));
  writeFileSync(join(project, 'main.py'), [
    'import sys',
    'print("hello from the box", flush=True)',
    'line = sys.stdin.readline().strip()',
    'print(f"got: {line}", flush=True)',
    'sys.exit(3)',
    '',
  ].join('\n'));

  const serve = spawn(ferryBin, ['serve'], {
    cwd: project,
    env: { ...process.env, XDG_CACHE_HOME: join(dir, 'cache'), FERRY_AGENT: ferryAgent, SSH_AUTH_SOCK: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  serve.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => serve.on('exit', (code) => r(code)));
  const connection = createMessageConnection(new StreamMessageReader(serve.stdout), new StreamMessageWriter(serve.stdin));
  connection.listen();
  const rpc: Rpc = {
    // No params at all when there are none (vscode-jsonrpc would send `[]`, which ferry refuses for shutdown).
    request: (m, p) => (p === undefined ? connection.sendRequest(m) : connection.sendRequest(m, p)),
    notify: (m, p) => void (p === undefined ? connection.sendNotification(m) : connection.sendNotification(m, p)),
    onNotification: (m, h) => connection.onNotification(m, h),
    onRequest: (m, h) => connection.onRequest(m, h as any),
  };

  try {
    const host = new FakeHost();
    host.folders = [project];
    const events = { status: 0 };
    const ferry = new FerryController(rpc, host, { statusChanged: () => events.status++, runsChanged() {}, tunnelsChanged() {} });
    ferry.listen();

    // Lifecycle: initialize as a ferry client.
    const init = await rpc.request<any>('initialize', {
      processId: process.pid, clientInfo: { name: 'ferry-vscode-integration' }, rootUri: pathToFileURL(project).href,
      workspaceFolders: [{ uri: pathToFileURL(project).href, name: 'proj' }], capabilities: { experimental: { ferry: true } },
    });
    assert.equal(init.serverInfo.name, 'ferry');
    assert.ok(init.capabilities.executeCommandProvider.commands.includes('ferry.run'));
    assert.ok(init.capabilities.experimental.methods.includes('run/input'));
    rpc.notify('initialized', {});

    await ferry.start();
    assert.equal(ferry.status.state, 'connected', `status: ${ferry.status.render().tooltip}\n${host.logs.join('\n')}`);
    assert.ok(events.status > 0);
    const link = await rpc.request<{ remoteRoot: string }>('host/connect', { path: project });
    const box = join(link.remoteRoot, 'proj');  // the mapping's ~/proj, inside the local sandbox

    // A save reaches the box (sync on save, textDocument/didSave as VS Code sends it).
    writeFileSync(join(project, 'notes.txt'), 'saved in the editor\n');
    rpc.notify('textDocument/didSave', { textDocument: { uri: pathToFileURL(join(project, 'notes.txt')).href } });
    ferry.fileSaved();
    const onBox = join(box, 'notes.txt');
    await waitFor(`${onBox}`, () => existsSync(onBox) && readFileSync(onBox, 'utf8') === 'saved in the editor\n');

    // A run: its output in its terminal, a line typed into it reaches its stdin, the exit status.
    host.file = pythonFile(join(project, 'main.py'));
    const id = await ferry.runCurrentFile();
    assert.ok(id, host.messages.map((m) => m.text).join('\n'));
    const terminal = await waitFor('the run\'s terminal', () => host.terminals.find((t) => t.name === 'ferry: main.py on local'));
    await waitFor('the run\'s first line', () => terminal.text.includes('hello from the box\r\n'));
    terminal.type('typed in VS Code\r');
    await waitFor('the exit line', () => terminal.text.includes('exited with status 3'), 20000);
    assert.match(terminal.text, /hello from the box\r\ntyped in VS Code\r\ngot: typed in VS Code\r\n/);
    assert.ok((await ferry.listRuns()).some((r) => r.id === id && r.state === 'exited' && r.exitCode === 3));
    assert.match(ferry.status.render().text, /local: connected · synced/);

    await rpc.request('shutdown');
    rpc.notify('exit');
    assert.equal(await exited, 0, stderr);
  } finally {
    connection.dispose();
    if (serve.exitCode === null) serve.kill('SIGKILL');
    if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
  }
});
