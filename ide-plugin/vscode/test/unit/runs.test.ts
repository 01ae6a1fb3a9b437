import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineDiscipline, RunManager, exitLine, toTerminalText } from '../../src/runs';
import { FakeHost, FakeRpc, settle } from '../fakes';

test('output lines get \\r\\n, a lone \\r (a progress bar) stays', () => {
  assert.equal(toTerminalText('a\nb\r\nc\rd'), 'a\r\nb\r\nc\rd');
});

test('the exit line says status, signal or failure', () => {
  assert.equal(exitLine({ id: 'x', status: 0, exitCode: 0 }), 'ferry: the run exited with status 0');
  assert.equal(exitLine({ id: 'x', status: 130, signal: 2 }), 'ferry: the run was killed by signal 2 (status 130)');
  assert.match(exitLine({ id: 'x', status: 255, error: 'link lost' }), /following the run failed: link lost/);
});

test('the line discipline echoes, edits, sends lines, interrupts and closes stdin', () => {
  const seen: string[] = [];
  let echo = '';
  const d = new LineDiscipline({
    echo: (t) => (echo += t),
    send: (t) => seen.push(`send ${JSON.stringify(t)}`),
    eof: () => seen.push('eof'),
    interrupt: () => seen.push('int'),
  });
  d.input('hellx');
  d.input('\x7f');
  d.input('o\r');
  assert.deepEqual(seen, ['send "hello\\n"']);
  assert.equal(echo, 'hellx\b \bo\r\n');
  d.input('pa\x04');           // Ctrl-D with a partial line sends it without a newline
  d.input('\x04');             // Ctrl-D on an empty line: end of input
  d.input('x\x03');            // Ctrl-C drops the line and interrupts
  d.input('\x1b[A');           // an arrow key: nothing
  assert.deepEqual(seen, ['send "hello\\n"', 'send "pa"', 'eof', 'int']);
});

test('a claimed run gets a terminal with its output and exit status', async () => {
  const rpc = new FakeRpc();
  const host = new FakeHost();
  const runs = new RunManager(rpc, host);
  runs.listen(rpc);
  runs.claim('r1', 'ferry: main.py on box');
  rpc.emit('run/output', { id: 'r1', stream: 'stdout', offset: 0, text: 'hello\n' });
  rpc.emit('run/output', { id: 'r1', stream: 'stderr', offset: 11, base64: Buffer.from('w\xc3\xa4rn\n', 'latin1').toString('base64') });
  rpc.emit('run/exited', { id: 'r1', status: 0, exitCode: 0 });
  const t = host.terminal('ferry: main.py on box');
  assert.equal(t.text, 'hello\r\nwärn\r\n\r\n\x1b[1mferry: the run exited with status 0\x1b[0m\r\n');
  assert.deepEqual(runs.runningIds(), []);
  await settle();
});

test('output that overtakes the claim waits for it; unclaimed output gets a terminal of its own', () => {
  const rpc = new FakeRpc();
  const host = new FakeHost();
  const runs = new RunManager(rpc, host);
  runs.listen(rpc);
  rpc.emit('run/output', { id: 'early', stream: 'stdout', offset: 0, text: 'first\n' });
  assert.equal(host.terminals.length, 0);
  runs.claim('early', 'ferry: early.py');
  assert.equal(host.terminal('ferry: early.py').text, 'first\r\n');

  rpc.emit('run/output', { id: 'lens', stream: 'stdout', offset: 0, text: 'from a lens\n' });
  rpc.emit('run/exited', { id: 'lens', status: 3, exitCode: 3 });
  host.advance(RunManager.claimWaitMs);
  const t = host.terminal('ferry: run lens');
  assert.match(t.text, /from a lens\r\n/);
  assert.match(t.text, /\x1b\[1;31mferry: the run exited with status 3/);
});

test('typing goes to run/input, Ctrl-C to run/signal; closing a running terminal detaches', async () => {
  const rpc = new FakeRpc();
  rpc.answers.set('run/input', {});
  rpc.answers.set('run/signal', {});
  rpc.answers.set('run/detach', {});
  const host = new FakeHost();
  const runs = new RunManager(rpc, host);
  runs.listen(rpc);
  runs.claim('r2', 'ferry: ask.py');
  const t = host.terminal('ferry: ask.py');
  t.type('42\r');
  t.type('\x03');
  t.type('\x04');
  assert.deepEqual(rpc.sent('run/input'), [{ id: 'r2', text: '42\n' }, { id: 'r2', eof: true }]);
  assert.deepEqual(rpc.sent('run/signal'), [{ id: 'r2', signal: 'INT' }]);
  t.handlers.onClose();
  assert.deepEqual(rpc.sent('run/detach'), [{ id: 'r2' }]);
  rpc.emit('run/output', { id: 'r2', stream: 'stdout', offset: 20, text: 'late\n' });
  host.advance(1000);
  assert.equal(host.terminals.length, 1, 'no terminal comes back for a detached run');
  await settle();
});

test('the stream resumes after the last record shown, and overlapping records are not shown twice', () => {
  const rpc = new FakeRpc();
  const host = new FakeHost();
  const runs = new RunManager(rpc, host);
  runs.listen(rpc);
  runs.claim('r3', 'ferry: long.py');
  host.activeTerminal = 'ferry: long.py';
  rpc.emit('run/output', { id: 'r3', stream: 'stdout', offset: 0, text: 'abc\n' });  // 5 + 4 bytes
  assert.deepEqual(runs.resumePoints(), [{ id: 'r3', offset: 9 }]);
  rpc.emit('run/output', { id: 'r3', stream: 'stdout', offset: 0, text: 'abc\n' });
  assert.equal(host.terminal('ferry: long.py').text, 'abc\r\n');
  assert.equal(runs.current(), 'r3');
});
