// The extension's logic, VS Code-free: connects the project, turns commands into the helper's
// methods and commands (workspace/executeCommand ferry.run, ferry.debug, ...), answers the helper's
// questions, keeps the status bar's model and the training charts. Decisions stay with the helper:
// which interpreter, which paths, what to sync — this only maps VS Code's UI onto it.
import { basename, isAbsolute, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Host, PanelIo } from './host';
import {
  ConnectResult, DebugPrepared, Disposable, DoctorCheck, EnvSyncResult, ErrorCodes, GpuStatus, HostState, LaunchEntry,
  ProjectInfo, ProjectRunInfo, Rpc, RunStarted, SyncStatus, SyncSummary, TrainExited, TrainStarted, Tunnel,
  answer, call, errorCode, errorMessage, executeCommand, listen,
} from './rpc';
import { RunManager } from './runs';
import { StatusModel } from './status';
import { TrainingModel, summaryLine } from './training';

// The attach configuration VS Code starts from debug/prepare's answer: `debugpy` when the
// Python Debugger extension is there, else this extension's `ferry` type, whose adapter is
// debugpy itself behind ferry's tunnel (the same DAP server either way).
export function attachConfiguration(prepared: DebugPrepared, haveDebugpyExtension: boolean): Record<string, unknown> {
  return {
    ...prepared.configuration,
    type: haveDebugpyExtension ? 'debugpy' : 'ferry',
    ferryRunId: prepared.runId,
  };
}

export function describeSummary(s: SyncSummary): string {
  const parts = [`${s.filesSent} sent`, `${s.filesDeleted} deleted`, `${s.conflicts} conflicts`];
  if (s.heldDeletes?.length) parts.push(`${s.heldDeletes.length} deletes held`);
  if (s.errors?.length) parts.push(`${s.errors.length} errors`);
  return parts.join(', ');
}

export const namedTunnels = {
  jupyter: { name: 'jupyter', remotePort: 8888, title: 'Jupyter' },
  tensorboard: { name: 'tensorboard', remotePort: 6006, title: 'TensorBoard' },
} as const;

export function tunnelUrl(t: Tunnel): string {
  return `http://127.0.0.1:${t.localPort}/`;
}

interface Training {
  runId: string;
  name: string;
  model: TrainingModel;
  panel?: PanelIo;
  ended: boolean;
  postTimer?: Disposable;
}

export interface ControllerEvents {
  statusChanged(): void;
  runsChanged(): void;
  tunnelsChanged(): void;
}

// One workspace folder's project (a window of several folders can hold several) and its status.
interface ProjectSlot {
  info: ProjectInfo;
  status: StatusModel;
  lastSyncKey: string;
}

// Whether `file` lies inside `root` (both absolute, local).
function isInside(file: string, root: string): boolean {
  const rel = relative(root, file);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

export class FerryController {
  readonly runs: RunManager;
  private slots: ProjectSlot[] = [];
  // The status before any project is loaded, or when no folder has one.
  private readonly noProject = new StatusModel();
  private readonly trainings = new Map<string, Training>();
  private syncPoll?: Disposable;
  private connecting?: Promise<void>;

  // The project the person works in: the one holding the active editor's file, else the first.
  get project(): ProjectInfo | undefined {
    return this.currentSlot()?.info;
  }

  // The status bar shows that project's link.
  get status(): StatusModel {
    return this.currentSlot()?.status ?? this.noProject;
  }

  // Every workspace folder's project, in folder order.
  projects(): ProjectInfo[] {
    return this.slots.map((s) => s.info);
  }

  // Sets every project's status at once (the helper starting, or gone).
  setAllStatus(state: Parameters<StatusModel['set']>[0], message?: string): void {
    for (const s of [this.noProject, ...this.slots.map((x) => x.status)]) s.set(state, message);
  }

  private currentSlot(): ProjectSlot | undefined {
    const file = this.host.activeFile()?.path;
    if (file) {
      const holding = this.slots.filter((s) => isInside(file, s.info.root)).sort((a, b) => b.info.root.length - a.info.root.length);
      if (holding.length) return holding[0];
    }
    return this.slots[0];
  }

  private slotOf(root?: string, host?: string): ProjectSlot | undefined {
    return (root !== undefined ? this.slots.find((s) => s.info.root === root) : undefined) ??
      (host !== undefined ? this.slots.find((s) => s.info.host === host) : undefined);
  }

  constructor(private readonly rpc: Rpc, private readonly host: Host, private readonly events: ControllerEvents) {
    this.runs = new RunManager(rpc, host);
    this.runs.onEvents({ exited: () => this.events.runsChanged() });
  }

  // The helper's notifications and questions.
  listen(): Disposable[] {
    const rpc = this.rpc;
    return [
      ...this.runs.listen(rpc),
      listen(rpc, 'host/stateChanged', (s) => {
        (this.slotOf(s.root, s.host)?.status ?? this.status).hostState(s);
        this.events.statusChanged();
        if (s.state === 'connected') this.events.tunnelsChanged();
      }),
      listen(rpc, 'project/trust', (p) => {
        (this.slotOf(p.root)?.status ?? this.status).trust(p);
        this.events.statusChanged();
      }),
      listen(rpc, 'train/metrics', (p) => this.trainEvent(p.runId, p.event)),
      listen(rpc, 'train/exited', (p) => this.trainExited(p)),
      // A port a run opened on the box was forwarded, or its forward went (ferry serve's own offer
      // to open it in the browser comes as a showMessageRequest, which VS Code shows itself).
      listen(rpc, 'tunnel/changed', () => this.events.tunnelsChanged()),
      answer(rpc, 'host/confirmHostKey', async (p) => {
        const trust = 'Trust and connect';
        const answer = await this.host.ask(
          `ferry: ${p.host} offers a host key that known_hosts does not list.`,
          `${p.keyType} ${p.fingerprint}\n\nTrust it only if this is your box's key (compare with ssh-keygen -l on the box). ` +
            'It is recorded in known_hosts.', trust);
        return { accept: answer === trust };
      }),
      answer(rpc, 'host/passphrase', async (p) => {
        const passphrase = await this.host.input(`ferry: passphrase for ${p.keyFile} (not stored)`, '', true);
        return passphrase === undefined ? {} : { passphrase };
      }),
      answer(rpc, 'sync/confirmMassDelete', async (p) => {
        const yes = `Delete ${p.count} files`;
        const answer = await this.host.ask(`ferry: ${p.reason}.`, `On the box, under the mapping of ${p.root}. ` +
          'Keep them and the sync goes on without these deletes.', yes, 'Keep them');
        return { accept: answer === yes };
      }),
    ];
  }

  // Loads every workspace folder's project and links each to its host.
  start(): Promise<void> {
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private projectParams(): { path?: string } {
    const folder = this.project?.root ?? this.host.workspaceFolders()[0];
    return folder ? { path: folder } : {};
  }

  // project/load for each folder (a folder inside a project counts once; one without ferry.json
  // is left out); the status says why when none has one.
  private async loadProjects(): Promise<boolean> {
    const folders = this.host.workspaceFolders();
    const loaded: ProjectSlot[] = [];
    let failure: unknown;
    for (const folder of folders.length ? folders : [undefined]) {
      try {
        const info = await call(this.rpc, 'project/load', folder === undefined ? {} : { path: folder });
        if (loaded.some((s) => s.info.root === info.root)) continue;
        const slot = this.slotOf(info.root) ?? { info, status: new StatusModel(), lastSyncKey: '' };
        slot.info = info;
        loaded.push(slot);
      } catch (e) {
        if (errorCode(e) !== ErrorCodes.ProjectNotFound) failure ??= e;
        this.host.log(`project/load${folder === undefined ? '' : ' ' + folder}: ${errorMessage(e)}`);
      }
    }
    this.slots = loaded;
    this.host.setContext('ferry.active', loaded.length > 0);
    if (loaded.length === 0) {
      if (failure === undefined) this.noProject.set('noProject');
      else this.noProject.set('disconnected', errorMessage(failure));
      this.events.statusChanged();
    }
    return loaded.length > 0;
  }

  private async connect(): Promise<void> {
    if (!(await this.loadProjects())) return;
    await Promise.all(this.slots.map((slot) => this.connectProject(slot)));
    this.events.statusChanged();
    this.events.runsChanged();
    this.events.tunnelsChanged();
    this.envOffer ??= this.offerEnvMirror();
    await this.refreshSync();
  }

  private async connectProject(slot: ProjectSlot): Promise<void> {
    slot.status.setHost(slot.info.host);
    slot.status.project = this.slots.length > 1 ? slot.info.name : '';
    slot.status.set('connecting');
    this.events.statusChanged();
    try {
      const r = await call(this.rpc, 'host/connect', { path: slot.info.root });
      slot.status.set('connected', `${r.os} ${r.arch} · ${r.remoteRoot} · agent ${r.agentVersion}`);
      this.host.log(`connected to ${r.host}: ${r.remoteRoot}`);
    } catch (e) {
      slot.status.set('disconnected', errorMessage(e));
      this.host.log(`host/connect: ${errorMessage(e)}`);
      this.events.statusChanged();
      const doctor = 'Doctor';
      const retry = 'Retry';
      const which = this.slots.length > 1 ? ` (${slot.info.name})` : '';
      const answer = await this.host.error(`ferry: cannot reach ${slot.info.host}${which}: ${errorMessage(e)}`, retry, doctor);
      if (answer === retry) return this.connectProject(slot);
      if (answer === doctor) await this.doctor();
    }
  }

  // The offer below, once per window (kept for tests to await).
  envOffer?: Promise<void>;

  // Completion and go-to-definition see the box's packages only once they are mirrored here: a
  // project with no mirror (.ferry/venv) is offered one when it connects (the server keeps an
  // existing mirror fresh by itself when the box's packages change).
  private async offerEnvMirror(): Promise<void> {
    for (const { info: project, status } of [...this.slots]) {
      if (project.host === 'local' || status.state !== 'connected') continue;
      if (this.host.setting<boolean>('offerEnvMirror') !== true) return;
      if (this.host.exists(join(project.root, '.ferry', 'venv'))) continue;
      const mirror = 'Mirror Them';
      const never = "Don't Ask Again";
      const answer = await this.host.info(`ferry: completion and go-to-definition can see the Python packages on ${project.host} ` +
        '(torch and the rest) once ferry mirrors them here (.ferry/venv, as `ferry env sync` does).', mirror, 'Not Now', never);
      if (answer === mirror) await this.envSync(project.root);
      else if (answer === never) await this.host.setSetting('offerEnvMirror', false);
    }
  }

  private projectFileUri(): string | undefined {
    return this.project ? pathToFileURL(join(this.project.root, 'ferry.json')).href : undefined;
  }

  private fail(what: string, e: unknown): void {
    const code = errorCode(e);
    if (code === ErrorCodes.RequestCancelled) return;
    const data = (e as { data?: { install?: string } })?.data;
    const install = data && typeof data.install === 'string' ? ` (${data.install})` : '';
    void this.host.error(`ferry: ${what}: ${errorMessage(e)}${install}`);
  }

  // The active editor's file, saved (the run reads what is on disk, and the save syncs it).
  private async currentFile(what: string, language?: string) {
    const file = this.host.activeFile();
    if (!file || file.isUntitled) {
      void this.host.warn(`ferry: open a ${language === 'python' ? 'Python file' : 'file'} to ${what}.`);
      return undefined;
    }
    if (file.isDirty && !(await file.save())) return undefined;
    return file;
  }

  private hostName(): string {
    return this.project?.host ?? 'the box';
  }

  // `tty`: the run gets a terminal on the box (pdb, ipython, input() with line editing); the
  // terminal here passes keys and its size through untouched (`ferry run --tty`).
  async runCurrentFile(args: string[] = [], tty = false): Promise<string | undefined> {
    const file = await this.currentFile('run it on the box', 'python');
    if (!file) return undefined;
    try {
      const options = tty ? { uri: file.uri, args, tty: true } : { uri: file.uri, args };
      const started = await executeCommand(this.rpc, 'ferry.run', options);
      this.runs.claim(started.id, `ferry: ${basename(file.path)} on ${this.hostName()}`, tty);
      this.events.runsChanged();
      void this.refreshSync();
      return started.id;
    } catch (e) {
      this.fail(`running ${basename(file.path)}`, e);
      return undefined;
    }
  }

  async launchEntries(): Promise<LaunchEntry[]> {
    const info = await call(this.rpc, 'project/load', this.projectParams());
    const slot = this.slotOf(info.root);
    if (slot) slot.info = info;
    return info.launch ?? [];
  }

  async runLaunchEntry(): Promise<void> {
    let entries: LaunchEntry[];
    try {
      entries = await this.launchEntries();
    } catch (e) {
      return this.fail('reading ferry.json', e);
    }
    if (entries.length === 0) {
      void this.host.info('ferry: ferry.json has no launch entries (see "launch" in docs/config.md).');
      return;
    }
    const picked = await this.host.pick(entries.map((entry) => ({
      label: entry.name,
      description: entry.kind ?? 'run',
      detail: [entry.script ?? (entry.module ? `-m ${entry.module}` : entry.config ?? ''), ...(entry.args ?? [])].join(' '),
      value: entry,
    })), `Run a launch entry of ferry.json on ${this.hostName()}`);
    if (!picked) return;
    await this.startEntry(picked.value);
  }

  async startEntry(entry: LaunchEntry): Promise<void> {
    const uri = this.projectFileUri();
    const kind = entry.kind ?? 'run';
    try {
      if (kind === 'run') {
        const started = await executeCommand(this.rpc, 'ferry.run', { uri, launch: entry.name });
        this.runs.claim(started.id, `ferry: ${entry.name} on ${this.hostName()}`);
        this.events.runsChanged();
      } else if (kind === 'debug') {
        const prepared = await executeCommand(this.rpc, 'ferry.debug', { uri, launch: entry.name, ...this.debugOptions() });
        await this.startDebugSession(prepared, entry.name);
      } else {
        const started = await executeCommand(this.rpc, 'ferry.train', { uri, launch: entry.name });
        this.openTraining(started.runId, entry.name);
      }
      void this.refreshSync();
    } catch (e) {
      this.fail(`starting ${entry.name}`, e);
    }
  }

  async stop(): Promise<void> {
    const id = this.runs.current();
    try {
      if (id) {
        await call(this.rpc, 'run/signal', { id, signal: 'INT' });
        return;
      }
      const training = [...this.trainings.values()].reverse().find((t) => !t.ended);
      if (training) return this.stopTraining(training.runId);
      await executeCommand(this.rpc, 'ferry.stop');
    } catch (e) {
      this.fail('stopping the run', e);
    }
  }

  private async startDebugSession(prepared: DebugPrepared, label: string): Promise<boolean> {
    this.runs.claim(prepared.runId, `ferry debug: ${label} on ${this.hostName()}`);
    this.events.runsChanged();
    const configuration = attachConfiguration(prepared, this.host.hasExtension('ms-python.debugpy'));
    configuration.name = `ferry: ${label} on ${this.hostName()}`;
    const ok = await this.host.startDebugging({ folder: this.project?.root, configuration });
    if (!ok) void this.host.error(`ferry: VS Code did not start the debug session for ${label}`);
    return ok;
  }

  // ferry.debug's options from the settings: debugpy's port on the box (`ferry.debugPort`).
  debugOptions(): { port?: number } {
    const port = this.host.setting<number>('debugPort');
    return typeof port === 'number' && port > 0 ? { port } : {};
  }

  async debugCurrentFile(): Promise<boolean> {
    const file = await this.currentFile('debug it on the box', 'python');
    if (!file) return false;
    try {
      const prepared = await executeCommand(this.rpc, 'ferry.debug', { uri: file.uri, ...this.debugOptions() });
      void this.refreshSync();
      return await this.startDebugSession(prepared, basename(file.path));
    } catch (e) {
      this.fail(`debugging ${basename(file.path)}`, e);
      return false;
    }
  }

  // A code lens (or any caller of the helper's own commands through VS Code) runs ferry.run,
  // ferry.debug, ferry.train...: vscode-languageclient sends them; these two adjust the arguments
  // (debugpy's port from the settings) and show what the command started.
  lensArguments(command: string, args: any[]): any[] {
    if (command === 'ferry.debug' && typeof args[0] === 'string' && this.debugOptions().port)
      return [{ uri: args[0], ...this.debugOptions() }, ...args.slice(1)];
    return args;
  }

  async lensResult(command: string, args: any[], result: any): Promise<void> {
    if (!result) return;
    const target = typeof args[0] === 'string' ? args[0] : typeof args[0]?.uri === 'string' ? args[0].uri : '';
    let label = command;
    try {
      if (target) label = basename(target.startsWith('file:') ? fileURLToPath(target) : target);
    } catch { /* not a file URI */ }
    if (command === 'ferry.run') {
      this.runs.claim((result as RunStarted).id, `ferry: ${label} on ${this.hostName()}`);
      this.events.runsChanged();
    } else if (command === 'ferry.debug') {
      await this.startDebugSession(result as DebugPrepared, label);
    } else if (command === 'ferry.train') {
      this.openTraining((result as TrainStarted).runId, label);
    } else if (command === 'ferry.sync') {
      this.status.synced(result as SyncSummary, this.host.now());
      this.events.statusChanged();
    }
  }

  // F5 on a `ferry` launch configuration: debug/prepare through ferry.debug, then the attach
  // configuration VS Code starts instead. Undefined cancels the launch (the error is shown).
  async resolveLaunchConfiguration(config: Record<string, any>): Promise<Record<string, unknown> | undefined> {
    if (config.request === 'attach') return config;
    const arg: Record<string, unknown> = { ...this.debugOptions() };
    let label: string;
    if (typeof config.launch === 'string' && config.launch) {
      arg.uri = this.projectFileUri();
      arg.launch = config.launch;
      label = config.launch;
    } else {
      const program = typeof config.program === 'string' && config.program ? config.program : this.host.activeFile()?.path;
      if (!program) {
        void this.host.error('ferry: the launch configuration names no program (or launch entry), and no file is open.');
        return undefined;
      }
      arg.uri = pathToFileURL(program).href;
      if (Array.isArray(config.args)) arg.args = config.args.map(String);
      label = basename(program);
    }
    try {
      const prepared = await executeCommand(this.rpc, 'ferry.debug', arg);
      this.runs.claim(prepared.runId, `ferry debug: ${label} on ${this.hostName()}`);
      const attach = attachConfiguration(prepared, this.host.hasExtension('ms-python.debugpy'));
      attach.name = config.name ?? attach.name;
      if (typeof config.justMyCode === 'boolean') attach.justMyCode = config.justMyCode;
      return attach;
    } catch (e) {
      this.fail(`debugging ${label}`, e);
      return undefined;
    }
  }

  // The helper asks (its trust question, with what ferry.json would do); a "Trust" answer records it.
  async trustProject(): Promise<void> {
    try {
      await executeCommand(this.rpc, 'ferry.trustProject', this.projectFileUri());
      this.status.trust({ root: this.project?.root ?? '', trusted: true });  // the project in front
      this.events.statusChanged();
      await this.start();
    } catch (e) {
      this.fail('trusting the project', e);
    }
  }

  // ---- sync ----

  async syncNow(): Promise<void> {
    try {
      const s = await executeCommand(this.rpc, 'ferry.sync', this.projectFileUri());
      this.status.synced(s, this.host.now());
      this.events.statusChanged();
      const words = `ferry: synced to ${this.hostName()}: ${describeSummary(s)}`;
      if (s.conflicts || s.errors?.length) {
        for (const c of s.conflictList ?? []) this.host.log(`conflict: ${c.path}: ${c.message}`);
        for (const err of s.errors ?? []) this.host.log(`error: ${err}`);
        const show = 'Show details';
        if ((await this.host.warn(words, show)) === show) this.host.showLog();
      } else {
        void this.host.info(words);
      }
    } catch (e) {
      this.fail('syncing', e);
    }
  }

  async pull(paths?: string[]): Promise<void> {
    if (!paths) {
      const typed = await this.host.input('ferry: pull which paths from the box? (relative to the mapping, space-separated)', 'outputs');
      if (!typed?.trim()) return;
      paths = typed.trim().split(/\s+/);
    }
    try {
      const s = await executeCommand(this.rpc, 'ferry.pull', ...paths);
      void this.host.info(`ferry: pulled ${s.filesSent} files from ${this.hostName()}` + (s.conflicts ? `, ${s.conflicts} conflicts left alone` : ''));
    } catch (e) {
      this.fail('pulling', e);
    }
  }

  // After a save: the helper pushes it in the background; follow sync/status until it is done.
  fileSaved(): void {
    if (!this.project) return;
    this.syncPoll?.dispose();
    let tries = 0;
    const poll = () => {
      this.syncPoll = undefined;
      void this.refreshSync().then((busy) => {
        if (busy && ++tries < 50) this.syncPoll = this.host.setTimer(poll, 200);
      });
    };
    this.syncPoll = this.host.setTimer(poll, 100);
  }

  // Reads each project's sync/status into its status; true while a sync is still going.
  async refreshSync(): Promise<boolean> {
    const busy = await Promise.all(this.slots.map((slot) => this.refreshProjectSync(slot)));
    return busy.some(Boolean);
  }

  private async refreshProjectSync(slot: ProjectSlot): Promise<boolean> {
    try {
      const s = await call(this.rpc, 'sync/status', { path: slot.info.root });
      const busy = s.saving || s.busy || s.pendingSaves.length > 0;
      slot.status.syncing = busy;
      if (s.lastSync) {
        const key = JSON.stringify(s.lastSync);
        if (key !== slot.lastSyncKey) {
          slot.lastSyncKey = key;
          slot.status.synced(s.lastSync, this.host.now());
        }
      }
      slot.status.lastError = s.lastError ?? '';
      this.events.statusChanged();
      return busy;
    } catch {
      return false;
    }
  }

  // The project in front's GPU (the status bar shows that one).
  async pollGpu(): Promise<void> {
    const slot = this.currentSlot();
    if (!slot || slot.status.state !== 'connected') return;
    try {
      // gpu/status (not the ferry.gpu command): it adds the host's price and the runs' costs.
      slot.status.gpu = await call(this.rpc, 'gpu/status', { path: slot.info.root });
    } catch {
      slot.status.gpu = undefined;
    }
    this.events.statusChanged();
  }

  async doctor(): Promise<void> {
    try {
      const r = await executeCommand(this.rpc, 'ferry.doctor', this.projectFileUri());
      this.host.log(`ferry doctor: ${r.host}`);
      let fails = 0;
      let warns = 0;
      for (const c of r.checks) {
        fails += c.status === 'fail' ? 1 : 0;
        warns += c.status === 'warn' ? 1 : 0;
        this.host.log(`  ${c.status.padEnd(4)} ${c.check}: ${c.detail}${c.fix ? ` (fix: ${c.fix})` : ''}`);
      }
      this.host.showLog();
      const words = `ferry doctor: ${r.checks.length} checks on ${r.host}, ${fails} failed, ${warns} warnings`;
      if (fails) void this.host.error(words);
      else if (warns) void this.host.warn(words);
      else void this.host.info(words);
    } catch (e) {
      this.fail('doctor', e);
    }
  }

  // ---- the box's Python packages ----

  // env/sync: the sources of the box's packages mirrored here, with .ferry/venv over them, so the
  // Python extension completes and resolves what the box has; the server keeps the mirror fresh
  // after that by itself (after a connect and each run, when the box's packages changed).
  async envSync(root?: string): Promise<void> {
    try {
      const r = await call(this.rpc, 'env/sync', root ? { path: root } : this.projectParams());
      let words = `ferry: the box's Python packages are mirrored here (${r.filesTotal} files, ${(r.bytesTotal / 1e6).toFixed(1)} MB; ${r.filesReceived} received)`;
      if (r.leftOut.length) words += `; left out past the size cap: ${r.leftOut.map((p) => p.package).join(', ')}`;
      if (r.venvPython) words += `. For completion, select ${r.venvPython} (Python: Select Interpreter).`;
      else if (r.venvError) words += `; .ferry/venv was not made: ${r.venvError}`;
      void this.host.info(words);
    } catch (e) {
      this.fail("mirroring the box's Python packages", e);
    }
  }

  // ---- tunnels ----

  async listTunnels(): Promise<Tunnel[]> {
    if (this.status.state !== 'connected') return [];
    const r = await call(this.rpc, 'tunnel/list', {});
    return r.tunnels;
  }

  async openTunnel(spec?: string): Promise<Tunnel | undefined> {
    if (!spec) {
      spec = await this.host.input('ferry: forward which port of the box? (REMOTE, or LOCAL:HOST:REMOTE; 127.0.0.1 only)', '8888');
      if (!spec?.trim()) return undefined;
    }
    try {
      const t = await executeCommand(this.rpc, 'ferry.tunnel', spec.trim());
      this.events.tunnelsChanged();
      const open = 'Open in Browser';
      if ((await this.host.info(`ferry: tunnel ${t.description ?? `127.0.0.1:${t.localPort} → ${t.remotePort}`}`, open)) === open)
        await this.host.openExternal(tunnelUrl(t));
      return t;
    } catch (e) {
      this.fail('opening the tunnel', e);
      return undefined;
    }
  }

  // Jupyter (8888) or TensorBoard (6006) on the box, in the browser: the tunnel already open to
  // that port, else a new one on a free local port.
  async openNamedTunnel(which: keyof typeof namedTunnels): Promise<Tunnel | undefined> {
    const spec = namedTunnels[which];
    try {
      let t = (await this.listTunnels()).find((x) => x.kind === 'local' && x.remotePort === spec.remotePort);
      if (!t) {
        t = await call(this.rpc, 'tunnel/open', { name: spec.name, remotePort: spec.remotePort, localPort: 0 });
        this.events.tunnelsChanged();
      }
      await this.host.openExternal(tunnelUrl(t));
      return t;
    } catch (e) {
      this.fail(`opening ${spec.title}`, e);
      return undefined;
    }
  }

  async closeTunnel(id: number): Promise<void> {
    try {
      await call(this.rpc, 'tunnel/close', { id });
    } catch (e) {
      this.fail('closing the tunnel', e);
    }
    this.events.tunnelsChanged();
  }

  async menu(): Promise<void> {
    type Action = () => Promise<unknown>;
    const items: { label: string; description?: string; value: Action }[] = [
      { label: '$(sync) Sync now', value: () => this.syncNow() },
      { label: '$(cloud-download) Pull…', value: () => this.pull() },
      { label: '$(checklist) Doctor', value: () => this.doctor() },
      { label: '$(plug) Open tunnel…', value: () => this.openTunnel() },
      { label: '$(notebook) Open Jupyter', description: 'port 8888 on the box', value: () => this.openNamedTunnel('jupyter') },
      { label: '$(graph) Open TensorBoard', description: 'port 6006 on the box', value: () => this.openNamedTunnel('tensorboard') },
      { label: '$(output) Show log', value: async () => this.host.showLog() },
    ];
    if (this.status.state === 'disconnected' || this.status.state === 'idle') items.unshift({ label: '$(debug-restart) Connect', value: () => this.start() });
    else items.push({ label: '$(debug-disconnect) Disconnect', description: 'runs go on on the box', value: () => this.disconnect() });
    if (this.status.untrusted) items.unshift({ label: '$(shield) Trust project…', description: 'ferry does nothing for it until then', value: () => this.trustProject() });
    const picked = await this.host.pick(items, `ferry: ${this.hostName()}`);
    if (picked) await picked.value();
  }

  // Closes the project's link (host/disconnect); runs go on on the box, Connect links again.
  async disconnect(): Promise<void> {
    try {
      await call(this.rpc, 'host/disconnect', this.projectParams());
      this.status.set('disconnected', 'disconnected');
      this.events.statusChanged();
      this.events.tunnelsChanged();
    } catch (e) {
      this.fail('disconnecting', e);
    }
  }

  // After a helper restart: the link again, and the runs this window showed, from where they were.
  async resume(): Promise<void> {
    await this.start();
    for (const { id, offset } of this.runs.resumePoints()) {
      try {
        await call(this.rpc, 'run/attach', { id, offset });
      } catch (e) {
        this.host.log(`run/attach ${id} at ${offset}: ${errorMessage(e)}`);
      }
    }
  }

  // ---- runs view ----

  // Every connected project's runs; with several projects each run says whose it is (`project`).
  async listRuns(): Promise<ProjectRunInfo[]> {
    const connected = this.slots.filter((s) => s.status.state === 'connected');
    const lists = await Promise.all(connected.map(async (slot) => {
      const r = await call(this.rpc, 'run/list', { path: slot.info.root });
      return this.slots.length > 1 ? r.runs.map((run) => ({ ...run, project: slot.info.name })) : r.runs;
    }));
    return lists.flat();
  }

  // The project a listed run came from (its root), for the calls about it.
  private runProject(r?: ProjectRunInfo): { path?: string } {
    const slot = r?.project !== undefined ? this.slots.find((s) => s.info.name === r.project) : undefined;
    return slot ? { path: slot.info.root } : {};
  }

  // Shows a run of the box in a terminal: from the start (its whole log), following it while it runs.
  async attachRun(id: string, label: string, r?: ProjectRunInfo): Promise<void> {
    this.runs.claim(id, `ferry: ${label}`);
    try {
      await call(this.rpc, 'run/attach', { id, offset: 0, ...this.runProject(r) });
    } catch (e) {
      this.fail(`attaching to ${id}`, e);
    }
  }

  async killRun(id: string, r?: ProjectRunInfo): Promise<void> {
    try {
      await call(this.rpc, 'run/signal', { id, signal: 'KILL', ...this.runProject(r) });
    } catch (e) {
      this.fail(`killing ${id}`, e);
    }
    this.host.setTimer(() => this.events.runsChanged(), 300);
  }

  // ---- training ----

  async train(path?: string): Promise<void> {
    let uri: string;
    let name: string;
    if (path) {
      uri = pathToFileURL(path).href;
      name = basename(path);
    } else {
      const file = await this.currentFile('train it on the box');
      if (!file) return;
      uri = file.uri;
      name = basename(file.path);
    }
    try {
      const started = await executeCommand(this.rpc, 'ferry.train', { uri });
      this.openTraining(started.runId, name);
      void this.refreshSync();
    } catch (e) {
      this.fail(`training ${name}`, e);
    }
  }

  private training(runId: string, name?: string): Training {
    let t = this.trainings.get(runId);
    if (!t) {
      t = { runId, name: name ?? runId, model: new TrainingModel(), ended: false };
      this.trainings.set(runId, t);
    }
    if (name) t.name = name;
    if (!t.panel) {
      const training = t;
      t.panel = this.host.createTrainingPanel(`Training ${t.name}`, this.project?.root ?? '', {
        onMessage: (m) => {
          if (m?.type === 'stop') void this.stopTraining(runId);
          if (m?.type === 'ready') this.postTraining(training, true);
        },
        onClose: () => (training.panel = undefined),
      });
    }
    return t;
  }

  openTraining(runId: string, name: string): void {
    const t = this.training(runId, name);
    t.panel?.reveal();
    this.postTraining(t, true);
    this.events.runsChanged();
  }

  // Posts the chart's data, at most every 200 ms while events stream.
  private postTraining(t: Training, now = false): void {
    const send = () => {
      t.postTimer = undefined;
      t.panel?.post({
        type: 'metrics', runId: t.runId, name: t.name, summary: summaryLine(t.model.summary), state: t.model.summary.state,
        loss: t.model.loss, evalLoss: t.model.evalLoss, throughput: t.model.throughput, ended: t.ended,
      });
    };
    if (now) {
      t.postTimer?.dispose();
      send();
    } else if (!t.postTimer) {
      t.postTimer = this.host.setTimer(send, 200);
    }
  }

  private trainEvent(runId: string, event: Record<string, unknown>): void {
    const t = this.training(runId);
    t.model.event(event);
    this.postTraining(t);
  }

  private trainExited(e: TrainExited): void {
    const t = this.training(e.runId);
    t.ended = true;
    if (e.error) t.model.summary.message = e.error;
    else if (t.model.summary.state === 'running' || t.model.summary.state === 'starting')
      t.model.summary.state = e.status === 0 ? 'done' : 'stopped';
    this.postTraining(t, true);
    const plot = e.outputs?.find((p) => p.endsWith('plot.svg'));
    if (plot) t.panel?.showImage(plot);
    const words = e.error ? `failed: ${e.error}` : e.signal !== undefined ? `was stopped by signal ${e.signal}` : `exited with status ${e.exitCode ?? e.status}`;
    const message = `ferry: training ${t.name} ${words}` + (e.outputs?.length ? ` (pulled ${e.outputs.map((p) => basename(p)).join(', ')})` : '');
    for (const n of e.notes ?? []) this.host.log(`training ${t.name}: ${n}`);
    if (e.status === 0 && !e.error) void this.host.info(message);
    else void this.host.warn(message);
    this.events.runsChanged();
  }

  runningTrainings(): { runId: string; name: string }[] {
    return [...this.trainings.values()].filter((t) => !t.ended).map((t) => ({ runId: t.runId, name: t.name }));
  }

  async stopTraining(runId?: string): Promise<void> {
    if (!runId) {
      const running = this.runningTrainings();
      if (running.length === 0) {
        void this.host.info('ferry: no training of this window is running.');
        return;
      }
      const picked = running.length === 1 ? { value: running[0].runId } :
        await this.host.pick(running.map((r) => ({ label: r.name, description: r.runId, value: r.runId })), 'Stop which training?');
      if (!picked) return;
      runId = picked.value;
    }
    try {
      // SIGINT: ferry-train writes a checkpoint, then exits (130).
      await call(this.rpc, 'train/stop', { runId });
      void this.host.info('ferry: stopping the training (it writes a checkpoint first).');
    } catch (e) {
      this.fail('stopping the training', e);
    }
  }
}
