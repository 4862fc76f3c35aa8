// nbagent inbox widget: paints the inbox model (nbagent/views/inbox.py, synced state "queues"):
// both pending queues, each item opening to a preview of what will be sent, a remove button each.
// The rows come from the shared painter (painter.js, put in front of this module by
// nbagent/widgets/_widgets.py). The default export runs once per widget model.

import { el as h, markPainted, paneHead, pendingItem, queueBox } from "./painter.js";

function inboxItem(m, ui, send) {
  const remove = h("button", "nba-remove", "remove");
  remove.type = "button";
  // Removing needs the kernel: the button works once the kernel has answered this view.
  remove.disabled = !ui.live || ui.removing.has(m.id);
  remove.title = ui.live
    ? "Cancel this pending message (agent.inbox.remove)"
    : "Needs the running kernel: run the cell that shows this inbox";
  const e = pendingItem(m, ui, [remove]);
  const row = e.querySelector("summary");
  remove.addEventListener("click", (ev) => {
    ev.preventDefault();
    ev.stopPropagation();
    ui.removing.add(m.id);
    // A disabled button drops the keyboard focus to <body>: keep it on this item's row.
    if (document.activeElement === remove) row.focus();
    remove.disabled = true;
    send({ type: "remove", id: m.id });
  });
  return e;
}

// Where the keyboard focus is inside the inbox: the item (by id and position) and which part.
function focusedPlace(root) {
  const active = document.activeElement;
  if (!active || !root.contains(active)) return null;
  const e = active.closest(".nba-inbox-item");
  if (!e) return { root: true };
  const items = [...root.querySelectorAll(".nba-inbox-item")];
  return { id: e.dataset.id, index: items.indexOf(e), button: active.matches(".nba-remove") };
}

// Put the focus back after a repaint: on the same item, or (it was removed) on the one now in its
// place, the last one, or the inbox itself; never lost to <body>.
function restoreFocus(root, place) {
  if (!place) return;
  const items = [...root.querySelectorAll(".nba-inbox-item")];
  const e = items.find((x) => x.dataset.id === place.id) || items[Math.min(place.index, items.length - 1)];
  const button = e?.querySelector(".nba-remove");
  const target = !e ? root : place.button && button && !button.disabled ? button : e.querySelector("summary");
  target.focus();
}

function draw(root, state, ui, send) {
  const place = focusedPlace(root);
  // What is opened now is what the user sees: keep it (a toggle event may not have run yet).
  for (const e of root.querySelectorAll("details.nba-inbox-item")) {
    if (e.open) ui.opened.add(e.dataset.id);
    else ui.opened.delete(e.dataset.id);
  }
  const q = state || { queues: [], pending: 0, pending_text: "0 pending", status: "idle", status_text: "" };
  const parts = [paneHead("Inbox", q.pending_text, q.status, q.status_text)];
  for (const queue of q.queues) parts.push(queueBox(queue.name, queue.hint, queue.items, (m) => inboxItem(m, ui, send)));
  if (q.error) parts.push(h("div", "nba-error-text", q.error));
  root.replaceChildren(...parts);
  restoreFocus(root, place);
  root.dataset.pending = String(q.pending);
  root.dataset.live = String(ui.live);
  markPainted(root);
}

export default () => {
  // Per model: opened items, items being removed, whether the kernel answered, views rendered.
  const ui = { opened: new Set(), removing: new Set(), live: false, views: 0 };
  return {
    render({ model, el }) {
      const root = h("div", "nbagent nba-inbox");
      root.tabIndex = -1; // focusable by script: where the focus goes when the last item is removed
      root.dataset.generation = String(++ui.views);
      el.append(root);
      const send = (msg) => model.send(msg);
      const redraw = () => {
        const state = model.get("queues");
        const pending = new Set((state?.queues || []).flatMap((queue) => queue.items.map((m) => m.id)));
        for (const id of ui.removing) if (!pending.has(id)) ui.removing.delete(id);
        draw(root, state, ui, send);
      };
      const onMsg = (msg) => {
        if (msg.type === "live") {
          ui.live = true;
          root.dataset.live = "true";
          for (const b of root.querySelectorAll(".nba-remove")) {
            b.disabled = ui.removing.has(b.closest(".nba-inbox-item").dataset.id);
            b.title = "Cancel this pending message (agent.inbox.remove)";
          }
        } else if (msg.type === "removed") {
          ui.removing.delete(msg.id);
          redraw();
        }
      };
      redraw();
      model.on("change:queues", redraw);
      model.on("msg:custom", onMsg);
      model.send({ type: "hello" });
      return () => {
        model.off("change:queues", redraw);
        model.off("msg:custom", onMsg);
      };
    },
  };
};
