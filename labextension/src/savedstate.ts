/**
 * A notebook's saved widget state (`metadata.widgets`), kept from doing harm.
 *
 * Untrusted notebooks: JupyterLab's widget manager (@jupyter-widgets/jupyterlab-manager) restores
 * the saved state of every notebook it opens, trusted or not, and makes each model in it; anywidget
 * imports a model's `_esm` when the model is made. So an unsigned notebook holding an anywidget
 * model would run its script on open, in JupyterLab and Notebook 7, whatever "Save Widget State
 * Automatically" says (docs/security.md has the upstream report). The manager reads the state once
 * its kernel is ready, which is after the document is (the document context resolves `ready`
 * before it starts the session). So once the document is ready, and whenever the state is written
 * again while the notebook is untrusted, the state is dropped from the open document: it is
 * neither restored nor saved. A notebook is trusted when it has code cells and every one is
 * trusted (the server marks every code cell by the notebook's signature; a notebook without code
 * cells has no widget output to show).
 *
 * nbagent's own models: with "Save Widget State Automatically" on, JupyterLab writes every live
 * widget model into the metadata, each anywidget model with its `_esm` code (and the approval
 * prompt's `context_html`). nbagent's outputs need none of it (this extension paints the timeline
 * bundle; GitHub, nbviewer and nbconvert show its `text/html`), and nbconvert's HTML exporter would
 * pick a widget view that needs the widget libraries from a CDN. So every model whose module is
 * nbagent's (its `_esm` starts with NBAGENT_MODULE) and the model of every output that carries a
 * timeline bundle are left out of the saved state.
 */

import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';

import { TIMELINE_MIME } from './paint';
import { WIDGET_VIEW_MIME } from './renderer';

const STATE_MIME = 'application/vnd.jupyter.widget-state+json';
/**
 * How every nbagent widget module starts (its first line, `MARK` in widgets.config.mjs, which builds
 * them; `MARK` in nbagent/widgets/modules.py). Modules of earlier versions start so too.
 */
export const NBAGENT_MODULE = '// nbagent widget module';

/** Whether `model` has code cells and every one is trusted. */
export function isTrusted(model: INotebookModel): boolean {
  let code = 0;
  for (const cell of model.cells) {
    if (cell.type === 'code') {
      if (!cell.trusted) {
        return false;
      }
      code++;
    }
  }
  return code > 0;
}

/** The widget model ids of the notebook's outputs that carry a timeline bundle. */
function timelineModels(model: INotebookModel): Set<string> {
  const ids = new Set<string>();
  for (const cell of model.cells) {
    const outputs = (cell as any).outputs;
    for (let i = 0; outputs && i < outputs.length; i++) {
      const data = outputs.get(i).data;
      const view = data[WIDGET_VIEW_MIME] as { model_id?: string } | undefined;
      if (view?.model_id && data[TIMELINE_MIME]) {
        ids.add(view.model_id);
      }
    }
  }
  return ids;
}

/** Whether a saved model runs nbagent's own widget module. */
function isNbagentModel(saved: unknown): boolean {
  const esm = (saved as { state?: { _esm?: unknown } } | null)?.state?._esm;
  return typeof esm === 'string' && esm.startsWith(NBAGENT_MODULE);
}

/** Remove nbagent's models (and the timeline outputs' models) from the saved widget state, if any are there. */
export function stripTimelineState(model: INotebookModel): void {
  const widgets = model.getMetadata('widgets') as Record<string, any> | undefined;
  const state = widgets?.[STATE_MIME]?.state as Record<string, unknown> | undefined;
  if (!state) {
    return;
  }
  const drop = timelineModels(model);
  const kept = Object.fromEntries(Object.entries(state).filter(([id, saved]) => !drop.has(id) && !isNbagentModel(saved)));
  if (Object.keys(kept).length === Object.keys(state).length) {
    return;
  }
  model.setMetadata('widgets', { ...widgets, [STATE_MIME]: { ...widgets![STATE_MIME], state: kept } });
}

/**
 * Drop the saved widget state of an untrusted notebook from the open document (the file keeps it
 * until the notebook is saved). Returns whether there was state to drop.
 */
export function dropUntrustedState(model: INotebookModel): boolean {
  if (model.getMetadata('widgets') === undefined || isTrusted(model)) {
    return false;
  }
  model.deleteMetadata('widgets');
  return true;
}

/**
 * Keep `panel`'s saved widget state from the widget manager while the notebook is untrusted, and
 * free of nbagent's models whenever it is written.
 */
export function watchSavedState(panel: NotebookPanel): void {
  const context = panel.context;
  const clean = (model: INotebookModel): void => {
    if (!dropUntrustedState(model)) {
      stripTimelineState(model);
    }
  };
  context.saveState.connect((_, phase) => {
    if (phase === 'started' && context.model) {
      clean(context.model);
    }
  });
  const guard = (): void => {
    const model = context.model;
    const dirty = model.dirty;
    if (dropUntrustedState(model)) {
      model.dirty = dirty; // dropped from the page only: nothing the user changed
    }
    model.metadataChanged.connect((changed, change) => {
      if (change.key === 'widgets') {
        clean(changed as INotebookModel);
      }
    });
  };
  if (context.isReady) {
    guard();
  } else {
    void context.ready.then(guard);
  }
}
