// nbagent diff widget: the turn diff's view model (nbagent/views/diff.py, diff_json; synced state
// "diff") painted by the shared painter (painter.js; labextension/widgets.config.mjs bundles it into
// this widget's module), the same painting as the lab extension's session tab.

import { diffView } from "./painter.js";

function render({ model, el }) {
  const paint = () => el.replaceChildren(diffView(model.get("diff") || {}));
  paint();
  model.on("change:diff", paint);
  return () => model.off("change:diff", paint);
}

export default { render };
