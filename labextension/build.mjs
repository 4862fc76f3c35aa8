// Build the prebuilt extension (dist/) with @jupyterlab/builder against the core packages of the
// JupyterLab that Python has installed ($PYTHON, else python3), as `jupyter labextension build` did.
import { execFileSync } from 'node:child_process';

const python = process.env.PYTHON || 'python3';
const where = 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))';
let core;
try {
  core = execFileSync(python, ['-c', where], { encoding: 'utf8' }).trim();
} catch {
  console.error(`nbagent: ${python} cannot import jupyterlab; set PYTHON to a Python that has JupyterLab 4`);
  process.exit(1);
}
const builder = 'node_modules/@jupyterlab/builder/lib/build-labextension.js';
execFileSync(process.execPath, [builder, '--core-path', core, ...process.argv.slice(2), '.'], { stdio: 'inherit' });
