/**
 * Saved widget state without nbagent's timeline models.
 *
 * With "Save Widget State Automatically" on, JupyterLab writes every live widget model into the
 * notebook's metadata. nbconvert's HTML exporter then picks the widget view over `text/html` for
 * any output whose model is in that state (nbconvert's WidgetsDataTypeFilter), and the view needs
 * the widget libraries from a CDN: offline, the timeline shows nothing. An nbagent output that
 * carries the timeline bundle needs no saved state (this extension paints the bundle; GitHub,
 * nbviewer and nbconvert show its `text/html`), so its models are left out of the saved state.
 */

import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';

import { TIMELINE_MIME } from './paint';
import { WIDGET_VIEW_MIME } from './renderer';

const STATE_MIME = 'application/vnd.jupyter.widget-state+json';

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

/** Remove the timeline outputs' models from the saved widget state, if any are there. */
export function stripTimelineState(model: INotebookModel): void {
  const widgets = model.getMetadata('widgets') as Record<string, any> | undefined;
  const state = widgets?.[STATE_MIME]?.state as Record<string, unknown> | undefined;
  if (!state) {
    return;
  }
  const drop = timelineModels(model);
  const kept = Object.fromEntries(Object.entries(state).filter(([id]) => !drop.has(id)));
  if (Object.keys(kept).length === Object.keys(state).length) {
    return;
  }
  model.setMetadata('widgets', { ...widgets, [STATE_MIME]: { ...widgets![STATE_MIME], state: kept } });
}

/** Keep `panel`'s saved widget state free of timeline models whenever it is written. */
export function watchSavedState(panel: NotebookPanel): void {
  const context = panel.context;
  context.saveState.connect((_, phase) => {
    if (phase === 'started' && context.model) {
      stripTimelineState(context.model);
    }
  });
  void context.ready.then(() => {
    context.model.metadataChanged.connect((model, change) => {
      if (change.key === 'widgets') {
        stripTimelineState(model as INotebookModel);
      }
    });
  });
}
