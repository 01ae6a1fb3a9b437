// Which `ferry` to start, and when to start it again.
import { posix, win32 } from 'node:path';

export interface HelperChoice {
  command: string;
  source: 'setting' | 'bundled' | 'PATH';
  // FERRY_AGENT for the helper: the bundled agent beside the bundled helper.
  agent?: string;
}

export interface FileProbe {
  isExecutable(path: string): boolean;
}

// The `ferry.path` setting, else the binaries inside the extension (bin/ferry, bin/ferry-agent of
// the platform package; bin\ferry.exe and the Linux agent bin\ferry-agent on Windows), else
// `ferry` on PATH (`ferry.exe`, PATH split at ';', on Windows). Undefined when none is found.
export function chooseHelper(setting: string | undefined, extensionDir: string, pathEnv: string | undefined,
                             probe: FileProbe, platform: NodeJS.Platform = process.platform): HelperChoice | undefined {
  const configured = setting?.trim();
  if (configured) return { command: configured, source: 'setting' };
  const windows = platform === 'win32';
  const path = windows ? win32 : posix;
  const exe = windows ? 'ferry.exe' : 'ferry';
  const bundled = path.join(extensionDir, 'bin', exe);
  if (probe.isExecutable(bundled)) {
    const agent = path.join(extensionDir, 'bin', 'ferry-agent');
    return { command: bundled, source: 'bundled', agent: probe.isExecutable(agent) ? agent : undefined };
  }
  for (const dir of (pathEnv ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, exe);
    if (probe.isExecutable(candidate)) return { command: candidate, source: 'PATH' };
  }
  return undefined;
}

// The helper died: start it again, and tell the user the first time only. Deaths that come too
// fast (more than `limit` within `windowMs`) stop the restarts: something is broken for good.
export class RestartPolicy {
  private deaths: number[] = [];
  private told = false;
  constructor(private readonly limit = 3, private readonly windowMs = 180_000) {}

  died(nowMs: number): { restart: boolean; tell: boolean } {
    this.deaths = this.deaths.filter((t) => nowMs - t < this.windowMs);
    this.deaths.push(nowMs);
    const restart = this.deaths.length <= this.limit;
    const tell = !this.told || !restart;
    this.told = true;
    return { restart, tell };
  }
}
