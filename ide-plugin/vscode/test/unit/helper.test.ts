import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RestartPolicy, chooseHelper } from '../../src/helper';

const probe = (existing: string[]) => ({ isExecutable: (p: string) => existing.includes(p) });

test('the ferry.path setting comes first, then the bundled binaries, then PATH', () => {
  const all = ['/ext/bin/ferry', '/ext/bin/ferry-agent', '/usr/local/bin/ferry'];
  assert.deepEqual(chooseHelper('/opt/ferry/bin/ferry', '/ext', '/usr/local/bin', probe(all)),
    { command: '/opt/ferry/bin/ferry', source: 'setting' });
  assert.deepEqual(chooseHelper('  ', '/ext', '/usr/local/bin', probe(all)),
    { command: '/ext/bin/ferry', source: 'bundled', agent: '/ext/bin/ferry-agent' });
  assert.deepEqual(chooseHelper(undefined, '/ext', '/usr/bin:/usr/local/bin', probe(['/usr/local/bin/ferry'])),
    { command: '/usr/local/bin/ferry', source: 'PATH' });
  assert.equal(chooseHelper(undefined, '/ext', '/usr/bin', probe([])), undefined);
});

test('on Windows the bundled ferry.exe, its Linux agent beside it, and ferry.exe along a ;-separated PATH', () => {
  const ext = 'C:\\Users\\me\\.vscode\\extensions\\ferry.ferry-0.1.0-win32-x64';
  const bundled = probe([`${ext}\\bin\\ferry.exe`, `${ext}\\bin\\ferry-agent`]);
  assert.deepEqual(chooseHelper(undefined, ext, 'C:\\Windows', bundled, 'win32'),
    { command: `${ext}\\bin\\ferry.exe`, source: 'bundled', agent: `${ext}\\bin\\ferry-agent` });
  const onPath = probe(['D:\\tools\\ferry\\ferry.exe']);
  assert.deepEqual(chooseHelper(undefined, ext, 'C:\\Windows;D:\\tools\\ferry', onPath, 'win32'),
    { command: 'D:\\tools\\ferry\\ferry.exe', source: 'PATH' });
  // A POSIX ferry (no .exe) on that PATH is not a Windows program.
  assert.equal(chooseHelper(undefined, ext, 'D:\\tools\\ferry', probe(['D:\\tools\\ferry\\ferry']), 'win32'), undefined);
  assert.deepEqual(chooseHelper('C:\\ferry\\ferry.exe', ext, '', onPath, 'win32'),
    { command: 'C:\\ferry\\ferry.exe', source: 'setting' });
});

test('a dying helper is restarted and the user told once; too many deaths stop the restarts', () => {
  const policy = new RestartPolicy(3, 180_000);
  assert.deepEqual(policy.died(0), { restart: true, tell: true });
  assert.deepEqual(policy.died(1000), { restart: true, tell: false });
  assert.deepEqual(policy.died(2000), { restart: true, tell: false });
  assert.deepEqual(policy.died(3000), { restart: false, tell: true });
  const later = new RestartPolicy(3, 180_000);
  for (const t of [0, 200_000, 400_000, 600_000]) assert.equal(later.died(t).restart, true);
});
