// The anywidget widgets' ES modules (the timeline, the inbox, the approval prompt, the turn diff),
// built with the extension's own toolchain: the bundler @jupyter/builder runs for the lab extension
// (rspack, webpack's configuration and plugins), the very copy that builder depends on.
//
// Each widget's source (src/widgets/<name>.js) imports the one painter (src/widgets/painter.js and
// the "What if…" editor, src/widgets/whatif_editor.js) with plain ES imports, as the lab extension
// does (src/paint.ts, src/whatif.ts). anywidget sends a widget's `_esm` as one module with nothing
// beside it to import, so each widget becomes one self-contained ES module: the modules it imports
// scope-hoisted into it whole (no tree shaking, no minifying: it reads like its sources in the
// browser's developer tools, and travels in the widget's state as before), its default export
// (anywidget's `render` object, or the function returning it) the module's only export.
//
// Every module starts with MARK: the lab extension leaves any model whose `_esm` starts with
// `NBAGENT_MODULE` (src/savedstate.ts) out of the widget state it saves, so a notebook nbagent
// wrote carries no widget code. The modules go into the Python package, nbagent/widgets/static/
// (git-ignored, in wheels as a hatch artifact), where nbagent/widgets/modules.py reads them.
//
//   node widgets.config.mjs            build once (jlpm build:widgets; part of jlpm build, build:prod)
//   node widgets.config.mjs --watch    rebuild on every change (jlpm watch:widgets)

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The first line of every widget module; it starts with NBAGENT_MODULE (src/savedstate.ts). */
export const MARK = '// nbagent widget module (labextension/src/widgets, built by labextension/widgets.config.mjs)';

/** The widgets, each the entry of its own module (nbagent/widgets/static/<name>.js). */
export const WIDGETS = ['timeline', 'inbox', 'approval', 'diff'];

export const OUTPUT = path.resolve(HERE, '..', 'nbagent', 'widgets', 'static');

/** rspack as @jupyter/builder (JupyterLab's extension builder) depends on it. */
async function bundler() {
  const builder = createRequire(createRequire(import.meta.url).resolve('@jupyter/builder'));
  return (await import(pathToFileURL(builder.resolve('@rspack/core')).href)).default;
}

export function config(rspack) {
  return {
    mode: 'production',
    context: HERE,
    entry: Object.fromEntries(WIDGETS.map(name => [name, `./src/widgets/${name}.js`])),
    target: ['web', 'es2020'],
    devtool: false,
    output: {
      path: OUTPUT,
      filename: '[name].js',
      module: true,
      library: { type: 'module' },
      chunkFormat: 'module',
      publicPath: '',
      clean: true
    },
    optimization: {
      minimize: false,
      concatenateModules: true,
      usedExports: false,
      splitChunks: false,
      runtimeChunk: false
    },
    performance: { hints: false },
    plugins: [new rspack.BannerPlugin({ banner: MARK, raw: true, entryOnly: true })]
  };
}

async function main() {
  const rspack = await bundler();
  const compiler = rspack(config(rspack));
  const report = (err, stats) => {
    if (err) {
      console.error(err.stack || err);
      process.exitCode = 1;
      return;
    }
    console.log(stats.toString({ colors: false, modules: false, assets: true }));
    if (stats.hasErrors()) {
      process.exitCode = 2;
    }
  };
  if (process.argv.includes('--watch')) {
    compiler.watch({}, report);
  } else {
    compiler.run((err, stats) => {
      report(err, stats);
      compiler.close(() => undefined);
    });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  await main();
}
