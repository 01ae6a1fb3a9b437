// Runs on the box as VS Code terminals: each run the helper streams (run/output, run/exited) gets
// a terminal fed with its output; what the user types goes back with run/input. A run without a
// tty gets a line discipline here (echo, backspace, Enter sends the line, Ctrl-C interrupts the
// run, Ctrl-D closes its stdin), as a terminal's would be on the box.
import type { Host, TerminalIo } from './host';
import type { Disposable, Requests, Rpc, RunExited, RunOutput } from './rpc';
import { call, errorMessage, listen } from './rpc';

// \n → \r\n (a terminal needs both); \r alone (progress bars) stays.
export function toTerminalText(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

export function exitLine(e: RunExited): string {
  if (e.error) return `ferry: following the run failed: ${e.error}`;
  if (e.signal !== undefined) return `ferry: the run was killed by signal ${e.signal} (status ${e.status})`;
  if (e.exitCode !== undefined) return `ferry: the run exited with status ${e.exitCode}`;
  return `ferry: the run ended (status ${e.status})`;
}

// Keystrokes of a terminal turned into what a run without a tty reads.
export interface LineActions {
  echo(text: string): void;
  send(text: string): void;   // to the run's stdin
  eof(): void;                 // close its stdin
  interrupt(): void;           // SIGINT
}

export class LineDiscipline {
  private line = '';
  constructor(private readonly actions: LineActions) {}

  input(data: string): void {
    for (const ch of Array.from(data)) {
      if (ch === '\r' || ch === '\n') {
        this.actions.echo('\r\n');
        this.actions.send(this.line + '\n');
        this.line = '';
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.line.length > 0) {
          const chars = Array.from(this.line);
          chars.pop();
          this.line = chars.join('');
          this.actions.echo('\b \b');
        }
      } else if (ch === '\x03') {
        this.actions.echo('^C\r\n');
        this.line = '';
        this.actions.interrupt();
      } else if (ch === '\x04') {
        if (this.line.length > 0) {
          this.actions.send(this.line);
          this.line = '';
        } else {
          this.actions.eof();
        }
      } else if (ch === '\x1b') {
        // Escape sequences (arrow keys) have no meaning for a plain stdin: drop the rest.
        return;
      } else if (ch >= ' ') {
        this.line += ch;
        this.actions.echo(ch);
      }
    }
  }
}

export interface RunEvents {
  exited?(e: RunExited): void;
}

class RunTerminal {
  private readonly decoder = new TextDecoder('utf-8');
  private readonly discipline: LineDiscipline;
  readonly io: TerminalIo;
  ended = false;
  closed = false;
  // Where the stream goes on: the byte offset in the run's log after the last record shown
  // (a record is 5 header bytes and its data). After a helper restart the run is attached there.
  nextOffset = 0;

  constructor(readonly id: string, readonly name: string, private readonly rpc: Rpc, host: Host,
              private readonly tty: boolean, onClose: (t: RunTerminal) => void) {
    this.discipline = new LineDiscipline({
      echo: (t) => this.io.write(t),
      send: (t) => this.call('run/input', { id, text: t }),
      eof: () => this.call('run/input', { id, eof: true }),
      interrupt: () => this.call('run/signal', { id, signal: 'INT' }),
    });
    this.io = host.createTerminal(name, {
      onInput: (data) => {
        if (this.ended) return;
        if (this.tty) this.call('run/input', { id, text: data });
        else this.discipline.input(data);
      },
      onResize: (cols, rows) => {
        if (this.tty && !this.ended) this.call('run/resize', { id, cols, rows });
      },
      onClose: () => {
        this.closed = true;
        onClose(this);
      },
    });
  }

  private call<M extends keyof Requests>(method: M, params: Requests[M]['params']): void {
    call(this.rpc, method, params).catch((e) => this.io.write(toTerminalText(`\nferry: ${method}: ${errorMessage(e)}\n`)));
  }

  output(o: RunOutput): void {
    const bytes = o.base64 !== undefined ? Buffer.from(o.base64, 'base64') : Buffer.from(o.text ?? '', 'utf8');
    if (o.offset < this.nextOffset) return;  // already shown (a re-attach that overlaps)
    this.nextOffset = o.offset + 5 + bytes.length;
    this.io.write(toTerminalText(this.decoder.decode(bytes, { stream: true })));
  }

  exited(e: RunExited): void {
    this.ended = true;
    const rest = this.decoder.decode();
    if (rest) this.io.write(toTerminalText(rest));
    const failed = e.status !== 0;
    // Bold, red for a failure: the status line stands out from the run's own output.
    this.io.write(`\r\n\x1b[1${failed ? ';31' : ''}m${exitLine(e)}\x1b[0m\r\n`);
  }
}

// Every run this window shows, by id. Output for an id nobody claimed yet (a run started from a
// code lens, or one whose first output overtook run/start's answer) waits briefly for a claim
// that names its terminal, then gets a terminal of its own.
export class RunManager {
  private readonly terminals = new Map<string, RunTerminal>();
  private readonly pending = new Map<string, { records: (RunOutput | RunExited)[]; timer: Disposable }>();
  private readonly detached = new Set<string>();
  private readonly listeners: RunEvents[] = [];
  private readonly running: string[] = [];
  static readonly claimWaitMs = 400;

  constructor(private readonly rpc: Rpc, private readonly host: Host) {}

  listen(rpc: Rpc): Disposable[] {
    return [
      listen(rpc, 'run/output', (p) => this.onOutput(p)),
      listen(rpc, 'run/exited', (p) => this.onExited(p)),
    ];
  }

  onEvents(l: RunEvents): void {
    this.listeners.push(l);
  }

  // The run `id` is shown as `name` (its terminal is made now if it has none).
  claim(id: string, name: string, tty = false): void {
    this.detached.delete(id);
    let t = this.terminals.get(id);
    if (!t || t.closed) t = this.open(id, name, tty);
    t.io.show();
    this.flush(id);
  }

  // Ids of runs this window follows that have not ended, oldest first.
  runningIds(): string[] {
    return [...this.running];
  }

  // The runs still followed and where their streams stand, to attach again after a helper restart.
  resumePoints(): { id: string; offset: number }[] {
    const out: { id: string; offset: number }[] = [];
    for (const id of this.running) {
      const t = this.terminals.get(id);
      if (t && !t.ended && !t.closed) out.push({ id, offset: t.nextOffset });
    }
    return out;
  }

  // The run whose terminal is in front, else the newest running one.
  current(): string | undefined {
    const name = this.host.activeTerminalName();
    for (const [id, t] of this.terminals) if (t.name === name && !t.ended && !t.closed) return id;
    return this.running[this.running.length - 1];
  }

  private open(id: string, name: string, tty: boolean): RunTerminal {
    const t = new RunTerminal(id, name, this.rpc, this.host, tty, (closed) => {
      if (!closed.ended) {
        // Closing the terminal stops following; the run goes on (the Runs view can attach again).
        this.detached.add(id);
        call(this.rpc, 'run/detach', { id }).catch(() => undefined);
        this.forget(id);
      }
    });
    this.terminals.set(id, t);
    if (!this.running.includes(id)) this.running.push(id);
    return t;
  }

  private forget(id: string): void {
    const i = this.running.indexOf(id);
    if (i >= 0) this.running.splice(i, 1);
  }

  private flush(id: string): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    p.timer.dispose();
    for (const r of p.records) {
      if ('status' in r) this.deliverExit(r as RunExited);
      else this.terminals.get(id)?.output(r as RunOutput);
    }
  }

  private hold(id: string, record: RunOutput | RunExited): void {
    let p = this.pending.get(id);
    if (!p) {
      const timer = this.host.setTimer(() => {
        if (!this.pending.has(id)) return;
        this.open(id, `ferry: run ${id}`, false).io.show();
        this.flush(id);
      }, RunManager.claimWaitMs);
      p = { records: [], timer };
      this.pending.set(id, p);
    }
    p.records.push(record);
  }

  onOutput(o: RunOutput): void {
    if (this.detached.has(o.id)) return;
    const t = this.terminals.get(o.id);
    if (t && !t.closed) t.output(o);
    else this.hold(o.id, o);
  }

  onExited(e: RunExited): void {
    if (this.detached.has(e.id)) return;
    const t = this.terminals.get(e.id);
    if (t && !t.closed) this.deliverExit(e);
    else this.hold(e.id, e);
  }

  private deliverExit(e: RunExited): void {
    this.terminals.get(e.id)?.exited(e);
    this.forget(e.id);
    for (const l of this.listeners) l.exited?.(e);
  }
}
