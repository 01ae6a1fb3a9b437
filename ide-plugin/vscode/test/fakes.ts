// Fakes of the helper (Rpc) and of VS Code (Host) for the unit tests: they record what the logic
// asked for and answer from scripts the test sets up.
import type { ActiveFile, DebugStart, Host, PanelHandlers, PanelIo, PickItem, TerminalHandlers, TerminalIo } from '../src/host';
import type { Disposable, ProjectRunInfo, Rpc, RunInfo, SyncSummary, Tunnel } from '../src/rpc';

export class FakeRpc implements Rpc {
  readonly requests: { method: string; params: any }[] = [];
  readonly notifications: { method: string; params: any }[] = [];
  private readonly notificationHandlers = new Map<string, ((p: any) => void)[]>();
  private readonly requestHandlers = new Map<string, (p: any) => unknown>();
  // Answers by method (or by `workspace/executeCommand:COMMAND`): a value, or a function of the params.
  readonly answers = new Map<string, unknown>();

  async request<R>(method: string, params?: any): Promise<R> {
    this.requests.push({ method, params });
    const key = method === 'workspace/executeCommand' ? `${method}:${params.command}` : method;
    if (!this.answers.has(key)) throw { code: -32601, message: `no fake answer for ${key}` };
    let answer = this.answers.get(key);
    if (typeof answer === 'function') answer = (answer as (p: unknown) => unknown)(params);
    if (answer instanceof Error || (answer && typeof answer === 'object' && 'code' in answer && 'message' in answer)) throw answer;
    return answer as R;
  }

  notify(method: string, params?: any): void {
    this.notifications.push({ method, params });
  }

  onNotification(method: string, handler: (p: any) => void): Disposable {
    const list = this.notificationHandlers.get(method) ?? [];
    list.push(handler);
    this.notificationHandlers.set(method, list);
    return { dispose: () => list.splice(list.indexOf(handler), 1) };
  }

  onRequest(method: string, handler: (p: any) => unknown): Disposable {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  // The server sends a notification / asks a question.
  emit(method: string, params: unknown): void {
    for (const h of this.notificationHandlers.get(method) ?? []) h(params);
  }

  async ask(method: string, params: unknown): Promise<unknown> {
    const h = this.requestHandlers.get(method);
    if (!h) throw new Error(`no handler for ${method}`);
    return h(params);
  }

  sent(method: string): any[] {
    return this.requests.filter((r) => r.method === method).map((r) => r.params);
  }

  commands(): any[] {
    return this.sent('workspace/executeCommand');
  }
}

export class FakeTerminal implements TerminalIo {
  text = '';
  shown = 0;
  constructor(readonly name: string, readonly handlers: TerminalHandlers) {}
  write(text: string) { this.text += text; }
  show() { this.shown++; }
  type(data: string) { this.handlers.onInput(data); }
}

export class FakePanel implements PanelIo {
  readonly posts: any[] = [];
  readonly images: string[] = [];
  revealed = 0;
  constructor(readonly title: string, readonly handlers: PanelHandlers) {}
  post(message: unknown) { this.posts.push(message); }
  showImage(path: string) { this.images.push(path); }
  reveal() { this.revealed++; }
}

interface Timer {
  fn: () => void;
  at: number;
  live: boolean;
}

export class FakeHost implements Host {
  readonly messages: { level: string; text: string }[] = [];
  readonly logs: string[] = [];
  readonly terminals: FakeTerminal[] = [];
  readonly panels: FakePanel[] = [];
  readonly debugStarts: DebugStart[] = [];
  readonly opened: string[] = [];
  readonly context = new Map<string, unknown>();
  readonly settings = new Map<string, unknown>();
  readonly extensions = new Set<string>();
  // What the user answers, in order (a message's action, a pick's label, an input's text).
  readonly answers: (string | undefined)[] = [];
  readonly asked: string[] = [];
  folders: string[] = ['/work/proj'];
  file?: ActiveFile;
  activeTerminal?: string;
  private clock = 0;
  private timers: Timer[] = [];

  private answer(): string | undefined {
    return this.answers.shift();
  }

  async info(text: string) { this.messages.push({ level: 'info', text }); return this.answer(); }
  async warn(text: string) { this.messages.push({ level: 'warn', text }); return this.answer(); }
  async error(text: string) { this.messages.push({ level: 'error', text }); return this.answer(); }
  async ask(text: string, detail: string) { this.asked.push(`${text}\n${detail}`); return this.answer(); }
  async pick<T>(items: PickItem<T>[], placeholder: string) {
    this.asked.push(placeholder);
    const label = this.answer();
    return items.find((i) => i.label === label);
  }
  async input(prompt: string) { this.asked.push(prompt); return this.answer(); }
  log(line: string) { this.logs.push(line); }
  showLog() {}
  createTerminal(name: string, handlers: TerminalHandlers) {
    const t = new FakeTerminal(name, handlers);
    this.terminals.push(t);
    return t;
  }
  activeTerminalName() { return this.activeTerminal; }
  activeFile() { return this.file; }
  workspaceFolders() { return this.folders; }
  async startDebugging(start: DebugStart) { this.debugStarts.push(start); return true; }
  hasExtension(id: string) { return this.extensions.has(id); }
  async openExternal(url: string) { this.opened.push(url); return true; }
  async openFile(path: string) { this.opened.push(path); }
  createTrainingPanel(title: string, _root: string, handlers: PanelHandlers) {
    const p = new FakePanel(title, handlers);
    this.panels.push(p);
    return p;
  }
  setContext(key: string, value: unknown) { this.context.set(key, value); }
  setting<T>(key: string) { return this.settings.get(key) as T | undefined; }
  async setSetting(key: string, value: unknown) { this.settings.set(key, value); }
  readonly files = new Set<string>();
  exists(path: string) { return this.files.has(path); }
  setTimer(fn: () => void, ms: number): Disposable {
    const t: Timer = { fn, at: this.clock + ms, live: true };
    this.timers.push(t);
    return { dispose: () => (t.live = false) };
  }
  now() { return new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + this.clock); }

  // Moves the fake clock, running the timers that come due.
  advance(ms: number): void {
    const until = this.clock + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      due.live = false;
      this.clock = due.at;
      due.fn();
    }
    this.clock = until;
    this.timers = this.timers.filter((t) => t.live);
  }

  terminal(name: string): FakeTerminal {
    const t = this.terminals.find((x) => x.name === name);
    if (!t) throw new Error(`no terminal ${name}; have ${this.terminals.map((x) => x.name).join(', ')}`);
    return t;
  }
}

export function pythonFile(path: string, dirty = false): ActiveFile & { saves: number } {
  const f = {
    path,
    uri: `file://${path}`,
    languageId: 'python',
    isDirty: dirty,
    isUntitled: false,
    saves: 0,
    async save() { f.saves++; f.isDirty = false; return true; },
  };
  return f;
}

// Lets queued promise callbacks run.
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

// Whole wire objects (src/wire.ts) from the fields a test is about: the rest as a real helper
// would send them for an idle, empty case.
export function wireRun(r: Partial<ProjectRunInfo> & Pick<RunInfo, 'id' | 'argv' | 'state' | 'startedAt'>): ProjectRunInfo {
  return { cwd: '.', root: '/work/proj', pid: 4242, logBytes: 0, ...r };
}

export function wireTunnel(t: Partial<Tunnel> & Pick<Tunnel, 'id' | 'kind' | 'localPort' | 'remotePort' | 'state'>): Tunnel {
  return { bindAddress: '127.0.0.1', accepted: 0, live: 0, description: '', ...t };
}

export function wireSummary(s: Partial<SyncSummary>): SyncSummary {
  return {
    filesSent: 0, filesDeleted: 0, conflicts: 0, bytesLiteral: 0, bytesMatched: 0, bytesOnWire: 0, seconds: 0, dirsMade: 0,
    metadataOnly: 0, unchanged: 0, dryRun: false, cancelled: false, conflictList: [], heldDeletes: [], errors: [], unstable: [],
    localScan: 'full', fullWalkReason: '', noSpace: null, ...s,
  };
}
