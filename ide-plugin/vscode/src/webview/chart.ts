// The training panel's script (bundled to dist/chart.js; the panel's CSP allows only it): draws
// loss / eval loss and samples/s against the step on canvases, shows plot.svg at the end, and
// asks the extension to stop the training.
declare function acquireVsCodeApi(): { postMessage(message: unknown): void };

interface Point {
  step: number;
  value: number;
}

const vscode = acquireVsCodeApi();
const stop = document.getElementById('stop') as HTMLButtonElement;
stop.addEventListener('click', () => {
  stop.disabled = true;
  vscode.postMessage({ type: 'stop' });
});

function cssColor(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

function draw(canvas: HTMLCanvasElement, lines: Point[][], dots: Point[]): void {
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  canvas.width = w * ratio;
  canvas.height = h * ratio;
  const g = canvas.getContext('2d');
  if (!g) return;
  g.scale(ratio, ratio);
  g.clearRect(0, 0, w, h);
  const all = [...lines.flat(), ...dots];
  const fg = cssColor('--vscode-foreground', '#ccc');
  g.strokeStyle = fg;
  g.globalAlpha = 0.4;
  g.strokeRect(40.5, 0.5, w - 41, h - 21);
  g.globalAlpha = 1;
  if (all.length === 0) return;
  const x0 = Math.min(...all.map((p) => p.step));
  const x1 = Math.max(...all.map((p) => p.step), x0 + 1);
  let y0 = Math.min(...all.map((p) => p.value));
  let y1 = Math.max(...all.map((p) => p.value));
  if (y1 - y0 < 1e-12) { y0 -= 0.5; y1 += 0.5; }
  const X = (s: number) => 41 + ((s - x0) / (x1 - x0)) * (w - 50);
  const Y = (v: number) => 4 + (1 - (v - y0) / (y1 - y0)) * (h - 30);
  g.fillStyle = fg;
  g.font = '11px sans-serif';
  g.fillText(y1.toPrecision(3), 2, 12);
  g.fillText(y0.toPrecision(3), 2, h - 24);
  g.fillText(String(x0), 42, h - 6);
  g.fillText(String(x1), w - 40, h - 6);
  const colors = [cssColor('--vscode-charts-blue', '#3794ff'), cssColor('--vscode-charts-green', '#89d185')];
  lines.forEach((line, i) => {
    g.strokeStyle = colors[i % colors.length];
    g.lineWidth = 1.5;
    g.beginPath();
    line.forEach((p, k) => (k === 0 ? g.moveTo(X(p.step), Y(p.value)) : g.lineTo(X(p.step), Y(p.value))));
    g.stroke();
  });
  g.fillStyle = cssColor('--vscode-charts-orange', '#d18616');
  for (const p of dots) {
    g.beginPath();
    g.arc(X(p.step), Y(p.value), 3.5, 0, Math.PI * 2);
    g.fill();
  }
}

window.addEventListener('message', (event: MessageEvent) => {
  const m = event.data;
  if (m?.type === 'metrics') {
    (document.getElementById('summary') as HTMLElement).textContent = m.summary;
    draw(document.getElementById('loss') as HTMLCanvasElement, [m.loss], m.evalLoss);
    draw(document.getElementById('throughput') as HTMLCanvasElement, [m.throughput], []);
    if (m.ended) stop.disabled = true;
  } else if (m?.type === 'plot') {
    const img = document.createElement('img');
    img.src = m.src;
    img.alt = 'plot.svg';
    const plot = document.getElementById('plot') as HTMLElement;
    plot.replaceChildren(img);
  }
});
vscode.postMessage({ type: 'ready' });
