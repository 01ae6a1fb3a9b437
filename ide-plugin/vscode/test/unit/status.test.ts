import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusModel } from '../../src/status';
import { wireSummary } from '../fakes';

test('the status bar follows the host state', () => {
  const s = new StatusModel();
  s.setHost('gpu-box');
  s.set('connecting');
  assert.equal(s.render().text, '$(sync~spin) gpu-box: connecting');
  s.hostState({ state: 'reconnecting', host: 'gpu-box', attempt: 2, message: 'no data for 12000 ms' });
  assert.equal(s.render().text, '$(sync~spin) gpu-box: reconnecting (2)');
  assert.equal(s.render().warning, true);
  assert.match(s.render().tooltip, /no data for 12000 ms/);
  s.hostState({ state: 'disconnected', host: 'gpu-box', message: 'auth failed' });
  assert.equal(s.render().text, '$(debug-disconnect) gpu-box: offline');
  s.hostState({ state: 'connected', host: 'gpu-box' });
  assert.equal(s.render().text, '$(cloud) gpu-box: connected');
  assert.equal(s.render().warning, false);
});

test('last sync and GPU use show while connected', () => {
  const s = new StatusModel();
  s.setHost('gpu-box');
  s.set('connected');
  s.synced(wireSummary({ filesSent: 2 }), new Date(2026, 0, 2, 3, 4, 5));
  s.gpu = { available: true, gpus: [{ index: 0, name: 'H200', util_percent: 91, mem_used_bytes: 9 * 2 ** 30, mem_total_bytes: 140 * 2 ** 30 }] };
  assert.equal(s.render().text, '$(cloud) gpu-box: connected · synced 03:04:05 · GPU 91% 9.0/140.0 GiB');
  assert.match(s.render().tooltip, /Last sync 03:04:05: 2 sent, 0 deleted, 0 conflicts/);
  assert.match(s.render().tooltip, /GPU 0 H200: 91%/);
  s.syncing = true;
  assert.match(s.render().text, /connected \$\(sync~spin\)/);
  s.set('reconnecting');
  assert.equal(s.gpu, undefined, 'GPU use is dropped when the link goes');
  s.set('noProject');
  assert.equal(s.render().text, '$(cloud) ferry: no project');
});

test('with a price the status bar shows the live cost: the host rate and the running runs so far', () => {
  const s = new StatusModel();
  s.setHost('gpu-box');
  s.set('connected');
  s.gpu = { available: false, reason: 'no NVIDIA GPU visible', usdPerHour: 3.06, runs: [{ id: 'r1', costUsd: 1.25 }, { id: 'r2', costUsd: 0.5 }] };
  assert.equal(s.render().text, '$(cloud) gpu-box: connected · $3.06/h · runs $1.75');
  assert.match(s.render().tooltip, /Host price \$3\.06\/h \(ferry\.json price\)/);
  assert.match(s.render().tooltip, /Run r1: \$1\.25 so far/);
  s.gpu = { available: false, usdPerHour: 0.69, runs: [] };
  assert.equal(s.render().text, '$(cloud) gpu-box: connected · $0.69/h', 'no running run: the rate alone');
  s.gpu = { available: false };
  assert.equal(s.render().text, '$(cloud) gpu-box: connected', 'no price in ferry.json: no money shown');
  s.gpu = { available: false, usdPerHour: 3.06, runs: [{ id: 'r1', costUsd: 1 }] };
  s.set('reconnecting');
  assert.doesNotMatch(s.render().text, /\/h/, 'the cost goes with the link');
});

test('on a Slurm cluster the allocation and its time left show where the price would, warning near its end', () => {
  const s = new StatusModel();
  s.setHost('login');
  s.set('connected');
  s.gpu = { available: false, slurm: { allocation: { jobId: '12', state: 'RUNNING', nodes: 'n1', timeLimit: '1:00:00', secondsLeft: 3520 } } };
  assert.equal(s.render().text, '$(cloud) login: connected · job 12 on n1 58:40 left');
  assert.match(s.render().tooltip, /Slurm allocation 12 on n1 \(time limit 1:00:00\)/);
  assert.equal(s.render().warning, false);
  s.gpu = { available: false, slurm: { allocation: { jobId: '12', state: 'RUNNING', nodes: 'n1', secondsLeft: 4000 * 24 } } };
  assert.match(s.render().text, /job 12 on n1 1-02:40:00 left/);
  s.gpu = { available: false, slurm: { allocation: { jobId: '12', state: 'RUNNING', nodes: 'n1', secondsLeft: 299 } } };
  assert.match(s.render().text, /4:59 left/);
  assert.equal(s.render().warning, true, 'under ten minutes left: the item turns to a warning');
  s.gpu = { available: false, slurm: {} };
  assert.equal(s.render().text, '$(cloud) login: connected');
  assert.match(s.render().tooltip, /Slurm: no allocation/);
  s.set('reconnecting');
  assert.doesNotMatch(s.render().text, /job 12/, 'the allocation goes with the link');
});

test('an untrusted project says so until it is trusted', () => {
  const s = new StatusModel();
  s.setHost('gpu-box');
  s.set('connected');
  s.trust({ root: '/w/repo', trusted: false, changed: ['host', 'sshConfig'], warnings: ['StrictHostKeyChecking is no for evil'] });
  const v = s.render();
  assert.equal(v.text, '$(shield) ferry: untrusted');
  assert.equal(v.warning, true);
  assert.match(v.tooltip, /ferry does nothing for \/w\/repo: ferry.json changed \(host, sshConfig\)/);
  assert.match(v.tooltip, /! StrictHostKeyChecking is no for evil/);
  s.trust({ root: '/w/repo', trusted: true });
  assert.equal(s.render().text, '$(cloud) gpu-box: connected');
});

test('the extension stays off in untrusted workspaces and offers the trust command', async () => {
  const { readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
  assert.equal(pkg.capabilities.untrustedWorkspaces.supported, false);
  assert.match(pkg.capabilities.untrustedWorkspaces.description, /Restricted Mode/);
  assert.ok(pkg.contributes.commands.some((c: { command: string }) => c.command === 'ferry.trustWorkspaceProject'));
});
