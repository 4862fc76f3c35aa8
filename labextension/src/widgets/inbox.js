// nbagent inbox widget: paints the inbox model (nbagent/views/inbox.py, synced state "queues"):
// both pending queues, each item opening to a preview of what will be sent, a remove button each.
// A pending item moves (agent.inbox.move, SPEC §11.1) by dragging it to another place or queue, or
// from the keyboard: Alt+ArrowUp / Alt+ArrowDown on its row, and its button to the other queue.
// The rows come from the shared painter (painter.js; labextension/widgets.config.mjs bundles it into
// this widget's module). The default export runs once per widget model.

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
  const other = m.queue === "next-step" ? "next-turn" : "next-step";
  const across = h("button", "nba-move", `to ${other}`);
  across.type = "button";
  across.disabled = !ui.live;
  across.title = `Move to the end of ${other} (agent.inbox.move)`;
  across.addEventListener("click", (ev) => {
    ev.preventDefault();
    ev.stopPropagation();
    ui.refocus = m.id;
    send({ type: "move", id: m.id, queue: other, index: ui.lengths[other] || 0 });
  });
  remove.after(across);
  e.draggable = ui.live;
  e.setAttribute("aria-keyshortcuts", "Alt+ArrowUp Alt+ArrowDown");
  e.addEventListener("dragstart", (ev) => {
    ev.dataTransfer.setData("application/x-nbagent-pending", m.id);
    ev.dataTransfer.effectAllowed = "move";
    ui.dragging = m.id;
  });
  e.addEventListener("dragend", () => {
    ui.dragging = null;
  });
  row.addEventListener("keydown", (ev) => {
    if (!ev.altKey || !ui.live || (ev.key !== "ArrowUp" && ev.key !== "ArrowDown")) return;
    ev.preventDefault();
    const index = ui.positions.get(m.id) + (ev.key === "ArrowUp" ? -1 : 1);
    if (index < 0 || index >= (ui.lengths[m.queue] || 0)) return;
    ui.refocus = m.id;
    send({ type: "move", id: m.id, queue: m.queue, index });
  });
  return e;
}

// Where a dragged item would land in `box` (a queue): its index there, counted without it.
function dropIndex(box, y, id) {
  const items = [...box.querySelectorAll(":scope > .nba-inbox-item")].filter((e) => e.dataset.id !== id);
  return items.filter((e) => {
    const r = e.getBoundingClientRect();
    return r.top + r.height / 2 < y;
  }).length;
}

function dropTarget(box, ui, send) {
  box.addEventListener("dragover", (ev) => {
    if (!ui.dragging || !ui.live) return;
    ev.preventDefault(); // this queue takes the drop
    ev.dataTransfer.dropEffect = "move";
    box.classList.add("nba-drop");
  });
  box.addEventListener("dragleave", () => box.classList.remove("nba-drop"));
  box.addEventListener("drop", (ev) => {
    box.classList.remove("nba-drop");
    const id = ev.dataTransfer.getData("application/x-nbagent-pending") || ui.dragging;
    if (!id || !ui.live) return;
    ev.preventDefault();
    ui.refocus = id;
    send({ type: "move", id, queue: box.dataset.queue, index: dropIndex(box, ev.clientY, id) });
  });
  return box;
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
  ui.positions = new Map();
  ui.lengths = {};
  for (const queue of q.queues) {
    ui.lengths[queue.name] = queue.items.length;
    queue.items.forEach((m, i) => ui.positions.set(m.id, i));
  }
  for (const queue of q.queues) {
    const paint = (m) => inboxItem({ ...m, queue: queue.name }, ui, send);
    parts.push(dropTarget(queueBox(queue.name, queue.hint, queue.items, paint), ui, send));
  }
  if (q.error) parts.push(h("div", "nba-error-text", q.error));
  root.replaceChildren(...parts);
  // After a move from the keyboard or a drop, the focus follows the moved item.
  const moved = ui.refocus && root.querySelector(`.nba-inbox-item[data-id="${CSS.escape(ui.refocus)}"] > summary`);
  if (moved) {
    ui.refocus = null;
    moved.focus();
  } else restoreFocus(root, place);
  root.dataset.pending = String(q.pending);
  root.dataset.live = String(ui.live);
  markPainted(root);
}

export default () => {
  // Per model: opened items, items being removed, whether the kernel answered, views rendered.
  const ui = { opened: new Set(), removing: new Set(), live: false, views: 0, dragging: null, refocus: null };
  ui.positions = new Map(); // pending id -> its index in its queue
  ui.lengths = {}; // queue name -> items
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
          for (const b of root.querySelectorAll(".nba-move")) b.disabled = false;
          for (const e of root.querySelectorAll(".nba-inbox-item")) e.draggable = true;
          for (const b of root.querySelectorAll(".nba-remove")) {
            b.disabled = ui.removing.has(b.closest(".nba-inbox-item").dataset.id);
            b.title = "Cancel this pending message (agent.inbox.remove)";
          }
        } else if (msg.type === "removed" || msg.type === "moved") {
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
