// nbagent approval prompt: the code a tool wants to run, with Approve / Deny / allow for this
// session. Synced state: "question" ({id, tool, turn, code, arguments}), "outcome" (a sentence once
// decided, "" while pending), "notice" (what the kernel said about the last click), "history" (the
// questions of the same cell decided before this one: {question, state, outcome}), "context_html"
// (the cell's live turn view as HTML, made and escaped by nbagent, shown above). While the
// question is pending and the prompt is on screen, the view tells the kernel so every few seconds
// (somebody is there to ask). A prompt whose kernel is gone (restarted, shut down: the widget
// manager marks the view "jupyter-widgets-disconnected", or a send fails) says so and offers nothing
// to click; it never throws. Its elements come from the shared painter (painter.js;
// labextension/widgets.config.mjs bundles it into this widget's module).

import { el as h, markPainted } from "./painter.js";

const SEEN_EVERY_MS = 5000;
// The views of each model on the page: a re-published output renders a new view of the same prompt
// before or after the old one goes, and focus moves with it.
const VIEWS = new WeakMap();
// A cell whose prompt went while it held focus carries this mark (each question is a widget of its
// own): the cell's next prompt takes focus back, unless the user has moved on (an editor, another
// element than the notebook itself).
const HANDOFF = "nbaApprovalFocus";

/** Where focus goes in a prompt's region: its first button still offered, else what was decided. */
function focusIn(root) {
  const current = root.querySelector(".nba-approval:last-child");
  const target = current && (current.querySelector("button:not([disabled])") || current.querySelector(".nba-approval-outcome"));
  (target || root).focus();
}

function card(q, state, outcome) {
  const box = h("div", "nba-approval");
  box.dataset.state = state;
  box.dataset.approvalId = q.id || "";
  const head = h("div", "nba-approval-head");
  head.append(h("span", null, outcome ? `Approval · ${q.tool}` : `Approval needed · ${q.tool}`));
  if (q.turn !== null && q.turn !== undefined) head.append(h("span", "nba-approval-where", `turn ${q.turn}`));
  box.append(head, h("pre", "nba-approval-code", q.code ?? q.arguments ?? ""));
  if (outcome) {
    const said = h("div", "nba-approval-outcome", outcome);
    said.tabIndex = -1; // where focus lands after a decision made from the keyboard
    box.append(said);
  }
  return box;
}

const GONE = "its kernel is gone (restarted or shut down): this prompt can no longer be answered; " +
  "a resumed session asks again if the model still wants to run it";

function draw(root, model, send, gone) {
  const q = model.get("question") || {};
  const outcome = model.get("outcome") || "";
  const earlier = (model.get("history") || []).map((r) => card(r.question || {}, r.state, r.outcome));
  const current = card(q, outcome ? model.get("state") || "decided" : gone ? "gone" : "pending", outcome);
  const parts = [];
  if (gone && !outcome) parts.push(h("div", "nba-approval-notice", GONE));
  if (!outcome && !gone) {
    const row = h("div", "nba-approval-buttons");
    const button = (action, label, title, msg, cls) => {
      const b = h("button", cls || "jp-Button jp-mod-styled", label);
      b.type = "button";
      b.dataset.action = action;
      b.title = title;
      b.addEventListener("click", () => {
        // A disabled button loses focus to <body>: hold it on the prompt's region until the redraw.
        if (root.contains(document.activeElement)) root.focus();
        for (const other of row.querySelectorAll("button")) other.disabled = true;
        send({ type: "decide", id: q.id, ...msg });
      });
      return b;
    };
    row.append(
      button("approve", "Approve", "Run it this once", { outcome: "allowed-once" }, "jp-Button jp-mod-styled jp-mod-accept"),
      button("deny", "Deny", "Do not run it; the model is told you declined", { outcome: "rejected" }, "jp-Button jp-mod-styled jp-mod-warn"),
      button("session", `Allow ${q.tool} for this session`, `Run this and every later ${q.tool} call without asking`, {
        outcome: "allowed-once",
        remember: true,
      }),
      h("span", "nba-approval-hint", "or %agent approve / %agent deny"),
    );
    parts.push(row);
  }
  const notice = model.get("notice");
  if (notice && !gone) parts.push(h("div", "nba-approval-notice", notice));
  current.append(...parts);
  const context = h("div", "nba-approval-context");
  context.innerHTML = model.get("context_html") || ""; // nbagent's own escaped rendering of the turn
  // A redraw replaces the button that had focus: keep focus in the prompt's region (on the first
  // button still offered, else on what was decided), never on <body>. Focus is only kept, never
  // taken: a prompt that appears while the user edits a cell leaves the editor focused.
  const hadFocus = root.contains(document.activeElement);
  root.replaceChildren(context, ...earlier, current);
  if (hadFocus) focusIn(root);
  markPainted(root);
}

/** What the live region says of a prompt: a new question (announced without moving focus), or its outcome. */
function announcement(model) {
  const q = model.get("question") || {};
  const outcome = model.get("outcome") || "";
  if (outcome) return `${q.tool || "tool"}: ${outcome}`;
  const where = q.turn !== null && q.turn !== undefined ? ` in turn ${q.turn}` : "";
  return q.id ? `Approval needed: ${q.tool || "a tool"}${where} wants to run code. Approve or Deny below.` : "";
}

function render({ model, el }) {
  const root = h("div", "nba-approvals");
  root.setAttribute("role", "region");
  root.setAttribute("aria-label", "Approval prompt");
  root.tabIndex = -1;
  // Screen readers hear each new question (and its outcome) from a polite live region that stays
  // in place across redraws; it is visually hidden and takes no focus.
  const live = h("div", "nba-sr-only");
  live.setAttribute("aria-live", "polite");
  live.setAttribute("role", "status");
  el.append(live, root);
  let said = "";
  const announce = () => {
    const words = announcement(model);
    if (words === said) return;
    said = words;
    live.textContent = words;
  };
  let gone = false;
  const disconnected = () => el.classList.contains("jupyter-widgets-disconnected");
  const redraw = () => {
    draw(root, model, send, gone);
    announce();
  };
  const markGone = () => {
    if (gone) return;
    gone = true;
    clearInterval(timer);
    redraw();
  };
  function send(msg) {
    if (gone || disconnected()) return markGone();
    try {
      model.send(msg);
    } catch (err) {
      markGone(); // the kernel's connection is closed ("Cannot send"): say so instead of throwing
    }
  }
  const seen = () => {
    if (!model.get("outcome") && root.isConnected) send({ type: "seen", id: (model.get("question") || {}).id });
  };
  const timer = setInterval(seen, SEEN_EVERY_MS);
  const connection = () => {
    if (disconnected()) markGone();
  };
  // Whether focus is in the prompt, so that when the view goes (the turn ended and the cell's output
  // was replaced) focus returns to the notebook around it (its cell stays active), not <body>.
  let focused = false;
  // The cell and notebook around the prompt, read while it is in the page (render runs before the
  // view is attached; the teardown after it is detached).
  let cellNode = null;
  let around = null;
  const place = () => {
    cellNode = el.closest(".jp-Cell") || cellNode;
    around = el.closest(".jp-Notebook") || around;
  };
  // Focus leaves the prompt only when it lands elsewhere: an element removed by a redraw (or the
  // whole view going) blurs to nothing, and that is not the user moving on.
  const moved = (e) => {
    focused = root.contains(e.target);
    if (focused) place();
  };
  document.addEventListener("focusin", moved, true);
  if (!VIEWS.has(model)) VIEWS.set(model, new Set());
  const views = VIEWS.get(model);
  const held = [...views].some((v) => v.contains(document.activeElement));
  views.add(root);
  draw(root, model, send, gone);
  if (held) focusIn(root); // an older view of this prompt had focus: this one takes it over
  requestAnimationFrame(() => {
    // In the page now: the first words for assistive technology, and focus back from the prompt
    // before it in this cell if that one had it and the user has not moved on since.
    place();
    announce();
    const handedOver = cellNode && cellNode.dataset[HANDOFF];
    if (cellNode) delete cellNode.dataset[HANDOFF];
    const a = document.activeElement;
    const idle = a === document.body || a === around || a === cellNode; // command mode: not an editor
    if (handedOver && idle && !model.get("outcome")) focusIn(root);
  });
  seen();
  const names = ["change:question", "change:outcome", "change:notice", "change:state", "change:history", "change:context_html"];
  for (const n of names) model.on(n, redraw);
  model.on("comm_live_update", connection);
  return () => {
    document.removeEventListener("focusin", moved, true);
    views.delete(root);
    if (focused) {
      // The view goes while it holds focus: to a newer view of the same prompt, else the notebook.
      const newer = [...views].find((v) => v.isConnected);
      if (newer) focusIn(newer);
      else {
        if (cellNode && cellNode.isConnected) cellNode.dataset[HANDOFF] = "1";
        if (around && around.isConnected) around.focus();
      }
    }
    clearInterval(timer);
    for (const n of names) model.off(n, redraw);
    model.off("comm_live_update", connection);
  };
}

export default { render };
