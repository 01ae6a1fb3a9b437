// What the extension's logic needs from VS Code, as a small interface: extension.ts implements it
// with the vscode API, tests with fakes (test/fakes.ts). Nothing here imports 'vscode'.
import type { Disposable } from './rpc';

export interface PickItem<T = unknown> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

// A terminal the logic feeds (VS Code: a Pseudoterminal in a Terminal).
export interface TerminalIo {
  // Bytes for the screen (already with \r\n line ends).
  write(text: string): void;
  // The terminal shows its end and stays until the user closes it.
  show(): void;
}

// What the terminal tells the logic: keystrokes, size, the user closing it.
export interface TerminalHandlers {
  onInput(data: string): void;
  onResize?(cols: number, rows: number): void;
  onClose(): void;
}

export interface ActiveFile {
  path: string;        // absolute local path
  uri: string;         // file:// URI
  languageId: string;
  isDirty: boolean;
  isUntitled: boolean;
  save(): Promise<boolean>;
}

export interface DebugStart {
  // The folder the configuration belongs to (a workspace folder's path), if any.
  folder?: string;
  configuration: Record<string, unknown>;
}

// The training chart (VS Code: a webview panel with a strict CSP and the bundled chart script).
export interface PanelIo {
  post(message: unknown): void;
  // A local file (the run's plot.svg) as an image in the panel.
  showImage(path: string): void;
  reveal(): void;
}

export interface PanelHandlers {
  onMessage(message: any): void;
  onClose(): void;
}

export interface Host {
  info(message: string, ...actions: string[]): Promise<string | undefined>;
  warn(message: string, ...actions: string[]): Promise<string | undefined>;
  error(message: string, ...actions: string[]): Promise<string | undefined>;
  // A modal question (blocking, as a host-key question should be).
  ask(message: string, detail: string, ...actions: string[]): Promise<string | undefined>;
  pick<T>(items: PickItem<T>[], placeholder: string): Promise<PickItem<T> | undefined>;
  input(prompt: string, value?: string, password?: boolean): Promise<string | undefined>;
  log(line: string): void;
  showLog(): void;
  createTerminal(name: string, handlers: TerminalHandlers): TerminalIo;
  // The terminal the user has in front, if it is one createTerminal made (its name).
  activeTerminalName(): string | undefined;
  activeFile(): ActiveFile | undefined;
  workspaceFolders(): string[];
  startDebugging(start: DebugStart): Promise<boolean>;
  hasExtension(id: string): boolean;
  openExternal(url: string): Promise<boolean>;
  openFile(path: string): Promise<void>;
  createTrainingPanel(title: string, resourceRoot: string, handlers: PanelHandlers): PanelIo;
  setContext(key: string, value: unknown): void;
  // A `ferry.*` setting, and changing one for this workspace.
  setting<T>(key: string): T | undefined;
  setSetting(key: string, value: unknown): Promise<void>;
  // Whether a local file or folder exists.
  exists(path: string): boolean;
  setTimer(fn: () => void, ms: number): Disposable;
  now(): Date;
}
