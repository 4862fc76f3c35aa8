/**
 * Galata's Playwright configuration, run offline: Debian's Chromium (no browser download) and a
 * JupyterLab server of its own on 127.0.0.1 (port NBAGENT_UI_TESTS_PORT, else 28888) whose root is
 * a fresh temporary folder (jupyter_server_test_config.py). Screenshots on failure go to
 * test-results/.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

// Playwright evaluates this file in more than one process: every value must be the same in each.
process.env.NBAGENT_UI_TESTS_PORT ??= '28888';
const port = process.env.NBAGENT_UI_TESTS_PORT;

module.exports = {
  ...baseConfig,
  reporter: [['list']],
  retries: 0,
  workers: 1,
  use: {
    ...baseConfig.use,
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: {
      executablePath: process.env.NBAGENT_CHROMIUM ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update']
    },
    screenshot: 'only-on-failure',
    trace: 'off',
    video: 'off' // Playwright records video with an ffmpeg of its own, which is not installed
  },
  webServer: {
    command: 'jlpm start',
    url: `http://127.0.0.1:${port}/lab`,
    timeout: 120 * 1000,
    reuseExistingServer: false
  }
};
