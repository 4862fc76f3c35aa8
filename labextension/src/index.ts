/**
 * nbagent in JupyterLab and Notebook 7:
 * - `nbagent:timeline-renderer` paints saved agent timelines without a kernel;
 * - `nbagent:sessions` adds the "Agent sessions" side panel, the read-only session tabs, and
 *   transcript export.
 */

import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';

import { download, fetchTranscript, ISession } from './api';
import { diffFactory } from './diffrenderer';
import { markdownFill } from './markdown';
import { SessionsPanel } from './panel';
import { setNotebookTracker } from './whatif';
import { liveDocumentPlugin } from './livedoc';
import { proposalHost, proposalPlugin } from './proposal';
import { RANK, timelineFactory } from './renderer';
import { watchRestarts } from './restart';
import { watchSavedState } from './savedstate';
import { SessionTimeline, sessionTab } from './tab';

import '../style/index.css';

const ICON = new LabIcon({
  name: 'nbagent:sessions',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm2 4v2h12V7H6zm0 4v2h8v-2H6z"/></g></svg>'
});

const COMMANDS = {
  open: 'nbagent:open-session',
  refresh: 'nbagent:refresh-sessions',
  exportMarkdown: 'nbagent:export-transcript',
  show: 'nbagent:show-sessions'
};

const rendererPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbagent:timeline-renderer',
  description: 'Renders saved nbagent timelines (application/vnd.nbagent.timeline+json) without a kernel.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookTracker, ITranslator],
  activate: (
    _app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    notebooks: INotebookTracker | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('nbagent');
    rendermime.addFactory(timelineFactory(null, markdownFill(rendermime), trans), RANK);
    rendermime.addFactory(diffFactory(), RANK);
    // Inside a notebook the renderer can hand over to the live widget of the same output.
    const adopt = (panel: NotebookPanel): void => {
      const registry = panel.content.rendermime;
      registry.addFactory(timelineFactory(registry, markdownFill(registry), trans, proposalHost(panel)), RANK);
      registry.addFactory(diffFactory(), RANK);
      watchSavedState(panel);
      watchRestarts(panel);
    };
    notebooks?.forEach(adopt);
    notebooks?.widgetAdded.connect((_, panel) => adopt(panel));
    setNotebookTracker(notebooks); // where a session tab looks for a kernel holding its session
  }
};

const sessionsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbagent:sessions',
  description: 'The Agent sessions side panel, read-only session timelines and transcript export.',
  autoStart: true,
  optional: [
    ILabShell,
    IDefaultFileBrowser,
    ILayoutRestorer,
    ICommandPalette,
    IRenderMimeRegistry,
    IMainMenu,
    ITranslator
  ],
  activate: (
    app: JupyterFrontEnd,
    labShell: ILabShell | null,
    browser: IDefaultFileBrowser | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    rendermime: IRenderMimeRegistry | null,
    mainMenu: IMainMenu | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('nbagent');
    const markdown = markdownFill(rendermime);
    const { commands, shell } = app;
    // Open session tabs are tracked, and restored after a page reload by running the open
    // command again with the file (a path relative to the server root) and the session id.
    const tracker = new WidgetTracker<MainAreaWidget<SessionTimeline>>({ namespace: 'nbagent-session' });
    void restorer?.restore(tracker, {
      command: COMMANDS.open,
      args: w => ({ ...sourceArgs(w.content.session), id: w.content.session.id, label: w.content.session.label }),
      name: w => `${w.content.session.db ? `db:${w.content.session.db}` : w.content.session.file}:${w.content.session.id}`
    });
    const open = (s: Pick<ISession, 'file' | 'id' | 'label' | 'db'>): void => {
      void commands.execute(COMMANDS.open, { ...sourceArgs(s), id: s.id, label: s.label });
    };
    commands.addCommand(COMMANDS.open, {
      label: trans.__('Open Agent Session Timeline'),
      execute: args => {
        // A database's session is named by the database's name (`db`), a file's by its path.
        const db = args.db ? String(args.db) : undefined;
        const session = {
          file: db ?? String(args.file),
          db,
          id: String(args.id),
          label: String(args.label ?? args.id)
        };
        // One tab per session of one file (or database): a copy of the file (`nbagent sessions
        // copy`) holds the same session id, and its tab is another tab.
        const same = tracker.find(
          w =>
            w.content.session.file === session.file &&
            w.content.session.db === session.db &&
            w.content.session.id === session.id
        );
        if (same) {
          shell.activateById(same.id);
          return same;
        }
        const tab = sessionTab(session, markdown, open, trans);
        // Notebook 7's pages hold one main widget (the notebook, the file browser): a session opens
        // in the page's right area there, beside the notebook; JupyterLab opens it as a main tab.
        const area = labShell ? 'main' : 'right';
        const taken = new Set(Array.from(shell.widgets(area), w => w.id));
        for (let n = 2; taken.has(tab.id); n++) {
          tab.id = `nbagent-session-${session.id}-${n}`;
        }
        const relabel = tab.content.onLabel;
        tab.content.onLabel = label => {
          relabel?.(label);
          void tracker.save(tab); // a restored tab comes back with its new label
        };
        void tracker.add(tab);
        shell.add(tab, area, { rank: 1000 });
        shell.activateById(tab.id);
        return tab;
      }
    });
    commands.addCommand(COMMANDS.exportMarkdown, {
      label: trans.__('Export Agent Session Transcript (Markdown)'),
      execute: async args => {
        const source = args.db ? { file: String(args.db), db: String(args.db) } : String(args.file);
        const { name, text } = await fetchTranscript(source, String(args.id), 'md');
        download(name, text);
      }
    });
    // JupyterLab's left sidebar; Notebook 7's left area (its notebook, editor and tree pages), shown
    // with "Show Agent Sessions" (View menu, command palette).
    const panel = new SessionsPanel({ open, trans });
    panel.title.icon = ICON;
    if (labShell) {
      labShell.add(panel, 'left', { rank: 600 });
    } else {
      shell.add(panel, 'left', { rank: 600 });
    }
    restorer?.add(panel, 'nbagent-sessions');
    commands.addCommand(COMMANDS.refresh, {
      label: trans.__('Refresh Agent Sessions'),
      execute: () => panel.refresh()
    });
    commands.addCommand(COMMANDS.show, {
      label: trans.__('Show Agent Sessions'),
      execute: () => shell.activateById(panel.id)
    });
    mainMenu?.viewMenu.addGroup([{ command: COMMANDS.show }], 100);
    palette?.addItem({ command: COMMANDS.show, category: trans.__('nbagent') });
    palette?.addItem({ command: COMMANDS.refresh, category: trans.__('nbagent') });
    if (browser) {
      const model = browser.model;
      panel.setFolder(model.path);
      model.pathChanged.connect(() => panel.setFolder(model.path));
      model.refreshed.connect(() => panel.noticeFiles({ path: model.path, items: () => model.items() }));
      model.fileChanged.connect((_, change) => {
        const paths = [change.oldValue?.path, change.newValue?.path];
        if (paths.some(p => p && /nbagent\.sqlite$/.test(p))) {
          void panel.refresh();
        }
      });
    } else {
      void panel.refresh();
    }
  }
};

/** The open command's arguments naming where a session is: `{db}` or `{file}`. */
function sourceArgs(s: { file: string; db?: string }): { file: string } | { db: string } {
  return s.db ? { db: s.db } : { file: s.file };
}

export default [rendererPlugin, sessionsPlugin, proposalPlugin, liveDocumentPlugin];
