// The VS Code side: starts `ferry serve` with vscode-languageclient (lifecycle, didSave, code
// lenses, progress, questions and diagnostics come with it), declares ferry's experimental
// capability so ferry's own notifications arrive, and maps VS Code's UI (status bar, terminals,
// debug sessions, views, a webview) onto FerryController. Logic lives in controller.ts.
import * as vscode from 'vscode';
import { accessSync, constants, existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import {
  CloseAction, ErrorAction, LanguageClient, State, type LanguageClientOptions, type ServerOptions, type StaticFeature,
} from 'vscode-languageclient/node';
import { FerryController } from './controller';
import { RestartPolicy, chooseHelper } from './helper';
import type { Host, PanelHandlers, PanelIo, TerminalHandlers, TerminalIo } from './host';
import type { ProjectRunInfo as RunInfo, Rpc, Tunnel } from './rpc';
import { runRow, tunnelRow } from './views';

let client: LanguageClient | undefined;

function nonce(): string {
  return randomBytes(16).toString('base64').replace(/[^A-Za-z0-9]/g, '');
}

class VscodeHost implements Host {
  constructor(private readonly context: vscode.ExtensionContext, private readonly channel: vscode.OutputChannel) {}

  info(message: string, ...actions: string[]) { return Promise.resolve(vscode.window.showInformationMessage(message, ...actions)); }
  warn(message: string, ...actions: string[]) { return Promise.resolve(vscode.window.showWarningMessage(message, ...actions)); }
  error(message: string, ...actions: string[]) { return Promise.resolve(vscode.window.showErrorMessage(message, ...actions)); }
  ask(message: string, detail: string, ...actions: string[]) {
    return Promise.resolve(vscode.window.showWarningMessage(message, { modal: true, detail }, ...actions));
  }
  async pick<T>(items: { label: string; description?: string; detail?: string; value: T }[], placeholder: string) {
    return vscode.window.showQuickPick(items, { placeHolder: placeholder });
  }
  async input(prompt: string, value?: string, password?: boolean) {
    return vscode.window.showInputBox({ prompt, value, password, ignoreFocusOut: true });
  }
  log(line: string) { this.channel.appendLine(line); }
  showLog() { this.channel.show(true); }

  createTerminal(name: string, handlers: TerminalHandlers): TerminalIo {
    const writes = new vscode.EventEmitter<string>();
    let opened = false;
    const early: string[] = [];
    const pty: vscode.Pseudoterminal = {
      onDidWrite: writes.event,
      open: (dims) => {
        opened = true;
        for (const t of early.splice(0)) writes.fire(t);
        if (dims) handlers.onResize?.(dims.columns, dims.rows);
      },
      close: () => handlers.onClose(),
      handleInput: (data) => handlers.onInput(data),
      setDimensions: (dims) => handlers.onResize?.(dims.columns, dims.rows),
    };
    const terminal = vscode.window.createTerminal({ name, pty, iconPath: new vscode.ThemeIcon('cloud') });
    this.context.subscriptions.push(writes);
    return {
      write: (text) => (opened ? writes.fire(text) : early.push(text)),
      show: () => terminal.show(true),
    };
  }

  activeTerminalName() { return vscode.window.activeTerminal?.name; }

  activeFile() {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return undefined;
    const doc = editor.document;
    return {
      path: doc.uri.fsPath,
      uri: doc.uri.toString(),
      languageId: doc.languageId,
      isDirty: doc.isDirty,
      isUntitled: doc.isUntitled || doc.uri.scheme !== 'file',
      save: () => Promise.resolve(doc.save()),
    };
  }

  workspaceFolders() { return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath); }

  async startDebugging(start: { folder?: string; configuration: Record<string, unknown> }) {
    const folder = vscode.workspace.workspaceFolders?.find((f) => start.folder && start.folder.startsWith(f.uri.fsPath));
    return vscode.debug.startDebugging(folder, start.configuration as vscode.DebugConfiguration);
  }

  hasExtension(id: string) { return vscode.extensions.getExtension(id) !== undefined; }
  async openExternal(url: string) { return vscode.env.openExternal(vscode.Uri.parse(url)); }
  async openFile(path: string) { await vscode.window.showTextDocument(vscode.Uri.file(path), { preview: true }); }

  createTrainingPanel(title: string, resourceRoot: string, handlers: PanelHandlers): PanelIo {
    const media = vscode.Uri.joinPath(this.context.extensionUri, 'dist');
    const roots = [media];
    if (resourceRoot) roots.push(vscode.Uri.file(resourceRoot));
    const panel = vscode.window.createWebviewPanel('ferry.training', title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: roots, retainContextWhenHidden: true });
    const n = nonce();
    const script = panel.webview.asWebviewUri(vscode.Uri.joinPath(media, 'chart.js'));
    const csp = [`default-src 'none'`, `img-src ${panel.webview.cspSource}`, `style-src 'nonce-${n}'`, `script-src 'nonce-${n}'`].join('; ');
    panel.webview.html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style nonce="${n}">
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px; }
header { display: flex; align-items: center; gap: 16px; }
h2 { font-weight: 600; margin: 12px 0; flex: 1; }
#summary { font-family: var(--vscode-editor-font-family); margin-bottom: 8px; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 4px 12px; cursor: pointer; }
button:disabled { opacity: 0.5; cursor: default; }
.chart { width: 100%; height: 220px; margin: 8px 0 16px; }
.legend { font-size: 12px; opacity: 0.8; }
#plot img { max-width: 100%; background: white; }
</style></head>
<body>
<header><h2 id="title">${title.replace(/[<>&"]/g, '')}</h2><button id="stop">Stop Training</button></header>
<div id="summary">starting…</div>
<div class="legend">loss (line), eval loss (dots)</div><canvas id="loss" class="chart"></canvas>
<div class="legend">samples/s</div><canvas id="throughput" class="chart"></canvas>
<div id="plot"></div>
<script nonce="${n}" src="${script}"></script>
</body></html>`;
    panel.webview.onDidReceiveMessage((m) => handlers.onMessage(m));
    panel.onDidDispose(() => handlers.onClose());
    return {
      post: (message) => void panel.webview.postMessage(message),
      showImage: (path) => void panel.webview.postMessage({ type: 'plot', src: panel.webview.asWebviewUri(vscode.Uri.file(path)).toString() }),
      reveal: () => panel.reveal(undefined, true),
    };
  }

  setContext(key: string, value: unknown) { void vscode.commands.executeCommand('setContext', key, value); }
  setting<T>(key: string) { return vscode.workspace.getConfiguration('ferry').get<T>(key); }
  async setSetting(key: string, value: unknown) {
    await vscode.workspace.getConfiguration('ferry').update(key, value, vscode.ConfigurationTarget.Workspace);
  }
  exists(path: string) { return existsSync(path); }
  setTimer(fn: () => void, ms: number) {
    const t = setTimeout(fn, ms);
    return { dispose: () => clearTimeout(t) };
  }
  now() { return new Date(); }
}

// LanguageClient as the controller's Rpc.
function clientRpc(c: LanguageClient): Rpc {
  return {
    request: (method, params) => c.sendRequest(method, params),
    notify: (method, params) => void c.sendNotification(method, params),
    onNotification: (method, handler) => c.onNotification(method, handler),
    onRequest: (method, handler) => c.onRequest(method, handler as any),
  };
}

// ferry's experimental capability: with it the helper sends run/output, host/stateChanged, its own
// questions, instead of LSP's fallbacks (log files, showMessageRequest).
const ferryCapability: StaticFeature = {
  fillClientCapabilities(capabilities) {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), ferry: true };
  },
  initialize() {},
  getState() { return { kind: 'static' }; },
  clear() {},
};

class RunsView implements vscode.TreeDataProvider<RunInfo> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  constructor(private readonly ferry: FerryController) {}
  refresh() { this.changed.fire(); }
  async getChildren(element?: RunInfo): Promise<RunInfo[]> {
    if (element) return [];
    try {
      return await this.ferry.listRuns();
    } catch {
      return [];
    }
  }
  getTreeItem(r: RunInfo): vscode.TreeItem {
    const row = runRow(r, new Date());
    const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
    item.id = r.id;
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.contextValue = row.contextValue;
    item.iconPath = new vscode.ThemeIcon(
      { running: 'sync~spin', ok: 'pass', failed: 'error', lost: 'question' }[row.icon],
      row.icon === 'failed' ? new vscode.ThemeColor('testing.iconFailed') : row.icon === 'ok' ? new vscode.ThemeColor('testing.iconPassed') : undefined);
    item.command = { command: 'ferry.attachRun', title: 'Attach', arguments: [r] };
    return item;
  }
}

class TunnelsView implements vscode.TreeDataProvider<Tunnel> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  constructor(private readonly ferry: FerryController) {}
  refresh() { this.changed.fire(); }
  async getChildren(element?: Tunnel): Promise<Tunnel[]> {
    if (element) return [];
    try {
      return await this.ferry.listTunnels();
    } catch {
      return [];
    }
  }
  getTreeItem(t: Tunnel): vscode.TreeItem {
    const row = tunnelRow(t);
    const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.contextValue = row.contextValue;
    item.iconPath = new vscode.ThemeIcon(t.kind === 'local' ? 'arrow-right' : 'arrow-left');
    return item;
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const channel = vscode.window.createOutputChannel('ferry', { log: true });
  context.subscriptions.push(channel);
  const host = new VscodeHost(context, channel);
  if ((vscode.workspace.workspaceFolders ?? []).length === 0) return;

  const settings = vscode.workspace.getConfiguration('ferry');
  const choice = chooseHelper(settings.get<string>('path'), context.extensionPath, process.env.PATH, {
    isExecutable(path) {
      try {
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
  });
  if (!choice) {
    void vscode.window.showErrorMessage('ferry: no ferry helper found: the extension has none bundled for this platform ' +
      'and none is on PATH. Set "ferry.path" to the ferry binary.', 'Open Settings').then((a) => {
      if (a) void vscode.commands.executeCommand('workbench.action.openSettings', 'ferry.path');
    });
    return;
  }
  channel.appendLine(`ferry: helper ${choice.command} (${choice.source})`);

  const env: Record<string, string> = { ...(process.env as Record<string, string>) };
  if (choice.agent && !env.FERRY_AGENT) env.FERRY_AGENT = choice.agent;
  const serverOptions: ServerOptions = {
    command: choice.command,
    args: ['--log-level', settings.get<string>('logLevel') ?? 'warn', 'serve'],
    options: { env, cwd: vscode.workspace.workspaceFolders![0].uri.fsPath },
  };

  const status = vscode.window.createStatusBarItem('ferry.status', vscode.StatusBarAlignment.Left, 100);
  status.name = 'ferry';
  status.command = 'ferry.showMenu';
  context.subscriptions.push(status);

  let ferry: FerryController | undefined;
  const policy = new RestartPolicy();
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    outputChannel: channel,
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        const { restart, tell } = policy.died(Date.now());
        ferry?.setAllStatus('helperDown');
        renderStatus();
        if (tell) {
          const words = restart ? 'ferry: the helper (ferry serve) stopped; it was started again. Its log is in the ferry output.'
            : 'ferry: the helper (ferry serve) keeps stopping; not starting it again. Run "ferry: Restart Helper" after fixing it.';
          void vscode.window.showWarningMessage(words, 'Show Log').then((a) => a && channel.show(true));
        }
        return { action: restart ? CloseAction.Restart : CloseAction.DoNotRestart, handled: true };
      },
    },
    middleware: {
      // A code lens runs ferry.run / ferry.debug / ferry.train through the helper; show what it started.
      executeCommand: async (command, args, next) => {
        if (!ferry) return next(command, args);
        const result = await next(command, ferry.lensArguments(command, args));
        await ferry.lensResult(command, args, result);
        if (command === 'ferry.sync') renderStatus();
        return result;
      },
    },
  };

  client = new LanguageClient('ferry', 'ferry', serverOptions, clientOptions);
  client.registerFeature(ferryCapability);
  const rpc = clientRpc(client);
  let runsView: RunsView | undefined;
  let tunnelsView: TunnelsView | undefined;
  function renderStatus() {
    if (!ferry) return;
    const view = ferry.status.render();
    status.text = view.text;
    status.tooltip = view.tooltip;
    status.backgroundColor = view.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    status.show();
  }
  ferry = new FerryController(rpc, host, {
    statusChanged: renderStatus,
    runsChanged: () => runsView?.refresh(),
    tunnelsChanged: () => tunnelsView?.refresh(),
  });
  const controller = ferry;
  runsView = new RunsView(controller);
  tunnelsView = new TunnelsView(controller);
  context.subscriptions.push(...controller.listen());
  controller.setAllStatus('connecting', 'starting the helper');
  renderStatus();
  // Several folders, several projects: the status bar follows the one the active editor is in.
  context.subscriptions.push(vscode.window.onDidChangeActiveTextEditor(() => {
    renderStatus();
    void controller.pollGpu();
  }));
  // A folder added to or removed from the window: its project is linked or let go.
  context.subscriptions.push(vscode.workspace.onDidChangeWorkspaceFolders(() => void controller.start()));

  const command = (id: string, fn: (...args: any[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  command('ferry.runCurrentFile', () => controller.runCurrentFile());
  command('ferry.runCurrentFileWithTerminal', () => controller.runCurrentFile([], true));
  command('ferry.runLaunchEntry', () => controller.runLaunchEntry());
  command('ferry.stopRun', () => controller.stop());
  command('ferry.debugCurrentFile', () => controller.debugCurrentFile());
  command('ferry.trainConfig', (uri?: vscode.Uri) => controller.train(uri instanceof vscode.Uri ? uri.fsPath : undefined));
  command('ferry.stopTraining', () => controller.stopTraining());
  command('ferry.syncNow', () => controller.syncNow());
  command('ferry.pullPaths', () => controller.pull());
  command('ferry.runDoctor', () => controller.doctor());
  command('ferry.envSync', () => controller.envSync());
  command('ferry.openTunnel', () => controller.openTunnel());
  command('ferry.openJupyter', () => controller.openNamedTunnel('jupyter'));
  command('ferry.openTensorBoard', () => controller.openNamedTunnel('tensorboard'));
  command('ferry.showMenu', () => controller.menu());
  command('ferry.restartHelper', () => client?.restart());
  command('ferry.trustWorkspaceProject', () => controller.trustProject());  // the server's own ferry.trustProject is registered by the language client
  command('ferry.refreshRuns', () => runsView?.refresh());
  command('ferry.attachRun', (r: RunInfo) => r && controller.attachRun(r.id, runRow(r, new Date()).label, r));
  command('ferry.showRunLog', (r: RunInfo) => r && controller.attachRun(r.id, runRow(r, new Date()).label, r));
  command('ferry.killRun', (r: RunInfo) => r && controller.killRun(r.id, r));
  command('ferry.refreshTunnels', () => tunnelsView?.refresh());
  command('ferry.closeTunnel', (t: Tunnel) => t && controller.closeTunnel(t.id));
  command('ferry.openTunnelInBrowser', (t: Tunnel) => t && host.openExternal(`http://127.0.0.1:${t.localPort}/`));

  context.subscriptions.push(
    vscode.window.registerTreeDataProvider('ferry.runs', runsView),
    vscode.window.registerTreeDataProvider('ferry.tunnels', tunnelsView),
    vscode.workspace.onDidSaveTextDocument((doc) => {
      if (doc.uri.scheme === 'file') controller.fileSaved();
    }),
    vscode.debug.registerDebugConfigurationProvider('ferry', {
      resolveDebugConfiguration(_folder, config) {
        // F5 with no launch.json: the current file.
        if (!config.type && !config.request && !config.name) {
          return { type: 'ferry', request: 'launch', name: 'ferry: current file on the box', program: '${file}' };
        }
        return config;
      },
      resolveDebugConfigurationWithSubstitutedVariables(_folder, config) {
        return controller.resolveLaunchConfiguration(config) as Promise<vscode.DebugConfiguration | undefined>;
      },
    }),
    // debugpy behind ferry's tunnel is itself a DAP server: VS Code talks to it directly.
    vscode.debug.registerDebugAdapterDescriptorFactory('ferry', {
      createDebugAdapterDescriptor(session) {
        const connect = session.configuration.connect as { host?: string; port: number } | undefined;
        if (!connect?.port) throw new Error('ferry: this attach configuration has no connect.port (start it with "ferry: Debug Current File on Remote")');
        return new vscode.DebugAdapterServer(connect.port, connect.host ?? '127.0.0.1');
      },
    }),
  );

  // GPU use in the status bar: polled only while the window has focus and the host is connected.
  const gpuSeconds = Math.max(2, settings.get<number>('gpuPollSeconds') ?? 10);
  const gpuTimer = setInterval(() => {
    if (vscode.window.state.focused) void controller.pollGpu();
  }, gpuSeconds * 1000);
  context.subscriptions.push({ dispose: () => clearInterval(gpuTimer) });

  let started = false;
  context.subscriptions.push(client.onDidChangeState((e) => {
    if (e.newState === State.Running) {
      const again = started;
      started = true;
      void (again ? controller.resume() : controller.start()).then(() => controller.pollGpu());
    }
  }));
  try {
    await client.start();
  } catch (e) {
    controller.setAllStatus('helperDown', String(e));
    renderStatus();
    void vscode.window.showErrorMessage(`ferry: the helper did not start: ${e instanceof Error ? e.message : e}`);
  }
}

export async function deactivate(): Promise<void> {
  if (client) await client.stop(5000).catch(() => undefined);
  client = undefined;
}
