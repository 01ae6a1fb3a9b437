// A training's numbers, from its train/metrics events (docs/train-events.md): the series the
// chart draws and the summary line above it (step, loss, samples/s, ETA). Pure.
export interface Point {
  step: number;
  value: number;
}

export interface TrainingSummary {
  state: 'starting' | 'running' | 'done' | 'interrupted' | 'error' | 'stopped';
  step: number;
  totalSteps?: number;
  loss?: number;
  evalLoss?: number;
  samplesPerS?: number;
  etaSeconds?: number;
  message?: string;
}

export class TrainingModel {
  readonly loss: Point[] = [];
  readonly evalLoss: Point[] = [];
  readonly throughput: Point[] = [];
  summary: TrainingSummary = { state: 'starting', step: 0 };
  private lastStepTime?: number;

  event(e: Record<string, any>): void {
    const s = this.summary;
    const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
    switch (e.event) {
      case 'start':
        s.state = 'running';
        s.step = num(e.step) ?? 0;
        s.totalSteps = num(e.total_steps);
        break;
      case 'step': {
        s.state = 'running';
        s.step = num(e.step) ?? s.step;
        const loss = num(e.loss);
        if (loss !== undefined) {
          this.loss.push({ step: s.step, value: loss });
          s.loss = loss;
        }
        const sps = num(e.samples_per_s);
        if (sps !== undefined) {
          this.throughput.push({ step: s.step, value: sps });
          s.samplesPerS = sps;
        }
        this.lastStepTime = num(e.step_time_s) ?? this.lastStepTime;
        if (s.totalSteps !== undefined && this.lastStepTime !== undefined)
          s.etaSeconds = Math.max(0, (s.totalSteps - s.step) * this.lastStepTime);
        break;
      }
      case 'eval': {
        const loss = num(e.loss);
        if (loss !== undefined) {
          this.evalLoss.push({ step: num(e.step) ?? s.step, value: loss });
          s.evalLoss = loss;
        }
        break;
      }
      case 'done':
        s.state = 'done';
        s.etaSeconds = 0;
        break;
      case 'interrupted':
        s.state = 'interrupted';
        s.message = typeof e.reason === 'string' ? e.reason : 'interrupted';
        break;
      case 'error':
        s.state = 'error';
        s.message = typeof e.message === 'string' ? e.message : 'error';
        break;
    }
  }
}

export function formatEta(seconds: number | undefined): string {
  if (seconds === undefined) return '–';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function summaryLine(s: TrainingSummary): string {
  const parts = [`step ${s.step}${s.totalSteps ? ` / ${s.totalSteps}` : ''}`];
  if (s.loss !== undefined) parts.push(`loss ${s.loss.toPrecision(4)}`);
  if (s.evalLoss !== undefined) parts.push(`eval loss ${s.evalLoss.toPrecision(4)}`);
  if (s.samplesPerS !== undefined) parts.push(`${Math.round(s.samplesPerS)} samples/s`);
  if (s.state === 'running') parts.push(`ETA ${formatEta(s.etaSeconds)}`);
  else parts.push(s.state + (s.message ? `: ${s.message}` : ''));
  return parts.join(' · ');
}
