// nbagent approval prompt: the code a tool wants to run, with Approve / Deny / allow for this
// session. Synced state: "question" ({id, tool, turn, code, arguments}), "outcome" (a sentence once
// decided, "" while pending), "notice" (what the kernel said about the last click), "history" (the
// questions of the same cell decided before this one: {question, state, outcome}), "context_html"
// (the cell's live turn view as HTML, made and escaped by nbagent, shown above). While the
// question is pending and the prompt is on screen, the view tells the kernel so every few seconds
// (somebody is there to ask). A prompt whose kernel is gone (restarted, shut down: the widget
// manager marks the view "jupyter-widgets-disconnected", or a send fails) says so and offers nothing
// to click; it never throws. Its elements come from the shared painter (painter.js, put in front
// of this module by nbagent/widgets/modules.py).

import { el as h, markPainted } from "./painter.js";

const SEEN_EVERY_MS = 5000;

function card(q, state, outcome) {
  const box = h("div", "nba-approval");
  box.dataset.state = state;
  box.dataset.approvalId = q.id || "";
  const head = h("div", "nba-approval-head");
  head.append(h("span", null, outcome ? `Approval · ${q.tool}` : `Approval needed · ${q.tool}`));
  if (q.turn !== null && q.turn !== undefined) head.append(h("span", "nba-approval-where", `turn ${q.turn}`));
  box.append(head, h("pre", "nba-approval-code", q.code ?? q.arguments ?? ""));
  if (outcome) box.append(h("div", "nba-approval-outcome", outcome));
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
  root.replaceChildren(context, ...earlier, current);
  markPainted(root);
}

function render({ model, el }) {
  const root = h("div", "nba-approvals");
  el.append(root);
  let gone = false;
  const disconnected = () => el.classList.contains("jupyter-widgets-disconnected");
  const redraw = () => draw(root, model, send, gone);
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
  const live = () => {
    if (disconnected()) markGone();
  };
  redraw();
  seen();
  const names = ["change:question", "change:outcome", "change:notice", "change:state", "change:history", "change:context_html"];
  for (const n of names) model.on(n, redraw);
  model.on("comm_live_update", live);
  return () => {
    clearInterval(timer);
    for (const n of names) model.off(n, redraw);
    model.off("comm_live_update", live);
  };
}

export default { render };
