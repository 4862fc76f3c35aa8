/**
 * A session's timeline in a main-area tab: read-only, painted by the same painter as saved outputs,
 * and following the session while another kernel writes it (it asks for a new bundle only when the
 * log has grown: the server answers 204 otherwise).
 */

import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import { downloadIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { download, fetchTimeline, fetchTranscript, ISession } from './api';
import { MarkdownFill } from './markdown';
import { el, TimelineView } from './paint';

/** How often a visible tab asks whether the session grew, and a hidden one. */
export const FOLLOW_MS = 1000;
export const HIDDEN_MS = 5000;

export class SessionTimeline extends Widget {
  constructor(
    readonly session: Pick<ISession, 'file' | 'id' | 'label'>,
    markdown: MarkdownFill | null = null
  ) {
    super();
    this._view = new TimelineView({ note: 'read-only', markdown });
    this.addClass('jp-nbagent-tab');
    this.node.dataset.file = session.file;
    this.node.dataset.session = session.id;
    this._status = el('div', 'jp-nbagent-tab-status', 'loading…');
    this.node.append(this._status, this._view.node);
  }

  /** Fetch now (if the log grew) and paint; resolves once painted. */
  async refresh(): Promise<void> {
    try {
      const known = this._view.bundle?.seq;
      const bundle = await fetchTimeline(this.session.file, this.session.id, known);
      if (this.isDisposed) {
        return;
      }
      if (bundle) {
        this._view.render(bundle);
        this.node.dataset.seq = String(bundle.seq);
      }
      this._status.textContent = `${this.session.file} · following · checked ${new Date().toLocaleTimeString()}`;
      this._status.dataset.state = 'ok';
    } catch (error) {
      this._status.textContent = `${this.session.file}: ${(error as Error).message}`;
      this._status.dataset.state = 'error';
    }
  }

  exportMarkdown = async (): Promise<void> => {
    const { name, text } = await fetchTranscript(this.session.file, this.session.id, 'md');
    download(name, text);
  };

  protected onAfterAttach(): void {
    this._follow();
  }

  protected onBeforeDetach(): void {
    window.clearTimeout(this._timer);
    this._timer = 0;
  }

  private _follow(): void {
    window.clearTimeout(this._timer);
    void this.refresh().then(() => {
      if (this.isAttached && !this.isDisposed) {
        this._timer = window.setTimeout(() => this._follow(), this.isVisible ? FOLLOW_MS : HIDDEN_MS);
      }
    });
  }

  private _view: TimelineView;
  private _status: HTMLElement;
  private _timer = 0;
}

export function sessionTab(
  session: Pick<ISession, 'file' | 'id' | 'label'>,
  markdown: MarkdownFill | null = null
): MainAreaWidget<SessionTimeline> {
  const content = new SessionTimeline(session, markdown);
  const widget = new MainAreaWidget({ content });
  widget.id = `nbagent-session-${session.id}`;
  widget.title.label = session.label.length > 40 ? `${session.label.slice(0, 39)}…` : session.label;
  widget.title.caption = `${session.label}\n${session.file} · session ${session.id}`;
  widget.title.closable = true;
  widget.addClass('jp-nbagent-session');
  widget.toolbar.addItem(
    'export',
    new ToolbarButton({
      icon: downloadIcon,
      label: 'Export Markdown',
      tooltip: 'Download the transcript as Markdown',
      onClick: () => void content.exportMarkdown()
    })
  );
  widget.toolbar.addItem(
    'refresh',
    new ToolbarButton({ icon: refreshIcon, tooltip: 'Check for new events now', onClick: () => void content.refresh() })
  );
  return widget;
}
