// nbagent inbox widget: both pending queues (synced state "queues"), a remove button per item.
// Plain ES module, no bundler.

const h = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
};

const size = (n) => (n < 1000 ? `${n} B` : n < 1e6 ? `${(n / 1000).toFixed(1)} kB` : `${(n / 1e6).toFixed(1)} MB`);
const QUEUES = [
  ["next_step", "next-step", "context and steering for the next step"],
  ["next_turn", "next-turn", "followups, one turn each"],
];

function item(m, send) {
  const li = h("li", "nba-inbox-item");
  li.dataset.id = m.id;
  li.dataset.kind = m.kind;
  const b = h("span", "nba-badge", m.kind);
  b.dataset.kind = m.kind;
  li.append(b);
  if (m.label) li.append(h("span", "nba-label", m.label));
  const line = h("span", "nba-line", m.first_line);
  line.title = m.first_line;
  const remove = h("button", "nba-remove", "remove");
  remove.title = "Cancel this pending message (agent.inbox.remove)";
  remove.addEventListener("click", () => {
    remove.disabled = true;
    send({ type: "remove", id: m.id });
  });
  li.append(line, h("span", "nba-size", size(m.size)), remove);
  return li;
}

function draw(root, state, send) {
  const q = state || {};
  const pending = (q.next_step || []).length + (q.next_turn || []).length;
  const head = h("div", "nba-head");
  const status = h("span", "nba-badge nba-status", q.status || "idle");
  status.dataset.status = q.status || "idle";
  head.append(h("span", null, "Inbox"), h("span", "nba-muted", `${pending} pending`), h("span", "nba-grow"), status);
  const parts = [head];
  for (const [key, name, hint] of QUEUES) {
    const box = h("div", "nba-queue");
    box.dataset.queue = name;
    const title = h("div", "nba-queue-name", name);
    title.title = hint;
    const list = h("ul");
    for (const m of q[key] || []) list.append(item(m, send));
    if (!(q[key] || []).length) list.append(h("li", "nba-empty", "empty"));
    box.append(title, list);
    parts.push(box);
  }
  if (q.error) parts.push(h("div", "nba-error-text", q.error));
  root.replaceChildren(...parts);
  root.dataset.pending = String(pending);
}

const generations = (globalThis.__nbagentInboxes ??= new Map()); // per widget uid: views rendered so far

function render({ model, el }) {
  const root = h("div", "nbagent nba-inbox");
  const uid = model.get("uid");
  generations.set(uid, (generations.get(uid) || 0) + 1);
  root.dataset.generation = String(generations.get(uid));
  el.append(root);
  const send = (msg) => model.send(msg);
  const redraw = () => draw(root, model.get("queues"), send);
  redraw();
  model.on("change:queues", redraw);
  return () => model.off("change:queues", redraw);
}

export default { render };
