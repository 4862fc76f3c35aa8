/**
 * The Agent sessions panel in JupyterLab, driven by Galata: it lists the session file that a real
 * agent (the offline echo model) wrote into the test's folder, and opens its timeline.
 */
import { expect, galata, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const WRITE_SESSION = `
import asyncio, sys
import nbagent

async def main(path):
    agent = nbagent.open_session(path, model="echo", title="Galata session")
    await agent.run("What does the panel list?")
    await agent.close()

asyncio.run(main(sys.argv[1]))
`;

/**
 * A session file written by Python's nbagent, uploaded into the test's folder on the server
 * through the contents API; its path there.
 */
async function writeSession(page: IJupyterLabPageFixture, tmpPath: string, name: string): Promise<string> {
  const local = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nbagent-galata-')), name);
  execFileSync(process.env.PYTHON ?? 'python3', ['-c', WRITE_SESSION, local]);
  const file = `${tmpPath}/${name}`;
  expect(await page.contents.uploadFile(local, file)).toBe(true);
  return file;
}

test.use({
  autoGoto: false, // the session file is written first, then JupyterLab opens in its folder
  // Galata's tracker of kernel sessions answers every URL matching /api/sessions, nbagent's
  // /nbagent/api/sessions too: this test starts no kernel, so it is left off.
  sessions: null,
  mockSettings: {
    ...galata.DEFAULT_SETTINGS,
    '@jupyterlab/apputils-extension:notification': { fetchNews: 'false', checkForUpdates: false }
  }
});

test('the Agent sessions panel lists the session file in the folder and opens it', async ({ page, tmpPath }) => {
  const errors: string[] = [];
  page.on('console', message => {
    if (message.type() === 'error') {
      errors.push(message.text());
    }
  });
  const file = await writeSession(page, tmpPath, 'galata.nbagent.sqlite');
  await page.goto();
  await page.filebrowser.openDirectory(tmpPath);

  await page.evaluate(() => window.jupyterapp.commands.execute('nbagent:show-sessions'));
  const panel = page.locator(`.jp-nbagent-panel[data-folder="${tmpPath}"][data-count="1"]`);
  await expect(panel).toBeVisible();
  const row = panel.locator('.jp-nbagent-row');
  await expect(row).toHaveCount(1);
  await expect(row).toHaveAttribute('data-file', file);
  await expect(row.locator('.jp-nbagent-row-label')).toHaveText('Galata session') // its title;
  await expect(row.locator('.jp-nbagent-row-meta')).toContainText('1 turn');

  await row.locator('.jp-nbagent-open').click();
  const tab = page.locator('.jp-nbagent-tab');
  await expect(tab.locator('.nba-turn[data-id="turn-1"][data-status="completed"]')).toBeVisible();
  await expect(tab).toContainText('What does the panel list?');
  await page.screenshot({ path: path.join(__dirname, '..', '..', '..', 'test-artifacts', 'galata-sessions-panel.png') });
  expect(errors).toEqual([]); // no console error, from nbagent or from JupyterLab
});
