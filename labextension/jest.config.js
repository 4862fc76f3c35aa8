// Jest as JupyterLab's extension template configures it: @jupyterlab/testutils' preset (ts-jest with
// tsconfig.test.json, a jsdom page), unit tests in src/__tests__/*.spec.ts.
const jestJupyterLab = require('@jupyterlab/testutils/lib/jest-config');

const esModules = [
  '@codemirror',
  '@jupyter/ydoc',
  '@jupyterlab/',
  'lib0',
  'nanoid',
  'vscode-ws-jsonrpc',
  'y-protocols',
  'y-websocket',
  'yjs'
].join('|');

module.exports = {
  ...jestJupyterLab(__dirname),
  automock: false,
  // the built extension's package.json would be a second module named nbagent
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/lib/', '<rootDir>/ui-tests/'],
  reporters: ['default'],
  testRegex: 'src/.*/.*.spec.ts[x]?$',
  transformIgnorePatterns: [`/node_modules/(?!${esModules}).+`]
};
