/**
 * The mime renderer of `application/vnd.nbagent.timeline+json`: a saved timeline shows without a
 * kernel and without saved widget state, in JupyterLab and Notebook 7.
 *
 * nbagent's widget outputs carry the live widget view, this bundle, `text/html` and `text/plain`.
 * This renderer ranks above the widget view, paints the bundle at once, and, inside a notebook,
 * also asks the notebook's widget renderer for the live view of the same output. Only when that view
 * really appears (the kernel, or saved widget state, has the model) does it take the painted
 * timeline's place, so "model not found" is never what the user sees.
 *
 * This renderer is `safe` (it paints text only); the widget renderer is not (a widget may hold
 * HTML). So the live view is tried only for a trusted output: an untrusted notebook's saved widget
 * state never reaches the page through this renderer, whatever its outputs claim.
 */

import { MimeModel, IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { Panel, Widget } from '@lumino/widgets';

import { MarkdownFill } from './markdown';
import { IBundle, SUPPORTED_VERSION, TIMELINE_MIME, TimelineView, unsupported } from './paint';
import { CanInsert } from './proposal';

export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';
/** The class jupyterlab-manager's widget renderer puts on its node when it shows an error instead. */
const GAVE_UP_CLASS = 'jupyter-widgets';
/**
 * What an nbagent widget module sets on its root once it has painted (`markPainted` of the shared
 * painter, src/widgets/painter.js): the signal that the live view is there.
 */
const PAINTED = '[data-nba-painted]';
/** Above the widget view's renderer (rank -10, jupyterlab-manager), below nothing else of ours. */
export const RANK = -20;

export class TimelineRenderer extends Panel implements IRenderMime.IRenderer {
  constructor(
    registry: IRenderMimeRegistry | null,
    markdown: MarkdownFill | null = null,
    trans: TranslationBundle = nullTranslator.load('nbagent'),
    host: CanInsert | null = null
  ) {
    super();
    // Untrusted: never insert; what the notebook already holds is shown all the same.
    const canInsert = host && Object.assign((): boolean | null => (this._trusted ? host() : null), { placed: host.placed });
    this._savedNote = trans.__('saved view');
    this._view = new TimelineView({ note: this._savedNote, markdown, canInsert });
    this.addClass('jp-nbagent-output');
    this._registry = registry;
    this._painted = new Widget({ node: this._view.node });
    this.addWidget(this._painted);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._trusted = model.trusted;
    const view = model.data[WIDGET_VIEW_MIME] as { model_id?: string } | undefined;
    if (!view?.model_id && this._modelId) {
      this._dropLive(); // the output is a bundle alone now (a turn's end after a restart): paint it
    }
    this._render(model);
    if (
      model.trusted &&
      view?.model_id &&
      view.model_id !== this._modelId &&
      this._registry?.getFactory(WIDGET_VIEW_MIME)
    ) {
      this._modelId = view.model_id;
      this._tryLive(model);
    }
  }

  /** Paint the bundle (unless the live widget has taken over). */
  private _render(model: IRenderMime.IMimeModel): void {
    if (this._painted.isDisposed) {
      return;
    }
    const bundle = model.data[TIMELINE_MIME] as unknown as IBundle | undefined;
    if (bundle && bundle.version === SUPPORTED_VERSION && Array.isArray(bundle.nodes)) {
      this._view.note = bundle.scope === null ? this._savedNote : '';
      this._view.render(bundle);
    } else {
      this._view.node.replaceChildren(unsupported(bundle, String(model.data['text/plain'] ?? '')));
    }
    this.node.dataset.view = 'saved';
  }

  /** Forget the live widget view: the painted timeline shows again. */
  private _dropLive(): void {
    this._observer?.disconnect();
    this._live?.dispose();
    this._live = null;
    this._modelId = '';
    if (this._painted.isDisposed) {
      this._painted = new Widget({ node: this._view.node });
      this.addWidget(this._painted);
    }
  }

  /** Render the widget view of the same output out of sight; show it once it has content. */
  private _tryLive(model: IRenderMime.IMimeModel): void {
    this._observer?.disconnect();
    this._live?.dispose();
    const live = this._registry!.createRenderer(WIDGET_VIEW_MIME);
    live.hide();
    this.addWidget(live);
    this._live = live;
    // The live view painted (the widget module marked its root, see PAINTED): show it. The widget
    // renderer gave up (it marks its own node `jupyter-widgets`): drop it, so its error text is
    // nowhere in the page; the painted timeline stays. Whatever text a view holds decides nothing.
    const settle = (): void => {
      if (live.isDisposed) {
        return;
      }
      if (live.node.querySelector(PAINTED)) {
        this._observer?.disconnect();
        live.show();
        this._painted.dispose(); // one timeline in the page: the live one
        this.node.dataset.view = 'live';
      } else if (live.node.classList.contains(GAVE_UP_CLASS)) {
        this._observer?.disconnect();
        live.dispose();
        this._live = null;
      }
    };
    this._observer = new MutationObserver(settle);
    this._observer.observe(live.node, {
      childList: true,
      subtree: true,
      attributes: true,
      attributeFilter: ['data-nba-painted', 'class']
    });
    const data = { [WIDGET_VIEW_MIME]: model.data[WIDGET_VIEW_MIME] };
    live
      .renderModel(new MimeModel({ data, metadata: model.metadata, trusted: model.trusted }))
      .then(settle)
      .catch(() => undefined); // the painted timeline stays
  }

  dispose(): void {
    this._observer?.disconnect();
    super.dispose();
  }

  private _registry: IRenderMimeRegistry | null;
  private _savedNote: string;
  private _view: TimelineView;
  private _painted: Widget;
  private _live: IRenderMime.IRenderer | null = null;
  private _modelId = '';
  private _trusted = false;
  private _observer: MutationObserver | null = null;
}

/**
 * A renderer factory; with `registry` (a notebook's), saved outputs defer to the live widget; with
 * `markdown`, assistant answers render as sanitized Markdown.
 */
export function timelineFactory(
  registry: IRenderMimeRegistry | null,
  markdown: MarkdownFill | null = null,
  trans: TranslationBundle = nullTranslator.load('nbagent'),
  host: CanInsert | null = null
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [TIMELINE_MIME],
    defaultRank: RANK,
    createRenderer: () => new TimelineRenderer(registry, markdown, trans, host)
  };
}
