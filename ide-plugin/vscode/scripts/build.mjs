// Bundles the extension (dist/extension.js, CommonJS for VS Code's extension host), the
// training chart's webview script (dist/chart.js, for the browser) and, with --tests, every
// test file (out/test/**.test.js) with esbuild, and copies protocol/spec's schemas to schemas/. Type checking is `npm run typecheck`.
import { build } from 'esbuild';
import { readdirSync, existsSync, rmSync, mkdirSync, copyFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: 'warning', absWorkingDir: root };

await build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js', platform: 'node',
  format: 'cjs', target: 'node20', external: ['vscode'] });
await build({ ...common, entryPoints: ['src/webview/chart.ts'], outfile: 'dist/chart.js', platform: 'browser',
  format: 'iife', target: 'es2022' });

// The JSON Schemas for jsonValidation, from the protocol's own (shipped in the package).
mkdirSync(join(root, 'schemas'), { recursive: true });
for (const name of ['ferry.schema.json', 'train-config.schema.json'])
  copyFileSync(join(root, '..', '..', 'protocol', 'spec', name), join(root, 'schemas', name));

if (process.argv.includes('--tests')) {
  rmSync(join(root, 'out'), { recursive: true, force: true });
  for (const kind of ['unit', 'integration']) {
    const dir = join(root, 'test', kind);
    if (!existsSync(dir)) continue;
    const entries = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => `test/${kind}/${f}`);
    if (entries.length === 0) continue;
    await build({ ...common, entryPoints: entries, outdir: `out/test/${kind}`, platform: 'node', format: 'cjs',
      target: 'node20', external: ['vscode'], sourcemap: 'inline' });
  }
}
