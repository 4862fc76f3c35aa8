/**
 * The mime renderer of `application/vnd.nbagent.diff+json`: the turn diff of `%agent diff`
 * (nbagent/views/diff.py's view model) painted by the shared painter, with or without a kernel.
 *
 * A diff never changes once made, so unlike the timeline there is no live view to hand over to: this
 * renderer ranks above the widget view and paints the saved view model, so a notebook reopened
 * without its kernel (or without saved widget state) shows the diff rather than "model not found".
 * It paints text only (`textContent`), so it is `safe` for untrusted outputs too.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { diffView, el } from './widgets/painter.js';
import type { IDiffModel } from './widgets/painter.js';
import { RANK } from './renderer';

export const DIFF_MIME = 'application/vnd.nbagent.diff+json';

/** Whether `value` looks like the diff view model this version paints (an object with steps). */
function isDiff(value: unknown): value is IDiffModel {
  return typeof value === 'object' && value !== null && Array.isArray((value as { steps?: unknown }).steps);
}

export class DiffRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('jp-nbagent-output');
    this.node.dataset.view = 'diff';
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[DIFF_MIME];
    const painted = isDiff(data)
      ? diffView(data)
      : el('div', 'nbagent nba-note', 'This nbagent diff was saved by a version this extension cannot read.');
    this.node.replaceChildren(painted);
  }
}

export function diffFactory(): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [DIFF_MIME],
    defaultRank: RANK,
    createRenderer: () => new DiffRenderer()
  };
}
