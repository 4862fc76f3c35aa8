// nbagent timeline widget: renders the view model of nbagent/widgets/timeline.py and applies the
// patches the kernel sends for new events ("add" / "set" / "text"). Plain ES module, no bundler.

const h = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
};

const badge = (kind, text, extra) => {
  const b = h("span", "nba-badge" + (extra ? " " + extra : ""), text ?? kind);
  b.dataset.kind = kind || "unknown";
  return b;
};

const size = (n) => (n < 1000 ? `${n} B` : n < 1e6 ? `${(n / 1000).toFixed(1)} kB` : `${(n / 1e6).toFixed(1)} MB`);
const KEEP_OPEN = 3; // turns expanded at first render (older ones start collapsed)
// Per widget (its "uid"): what the user expanded, kept when the output is re-published and the
// view rebuilt. Global because each view may get its own model proxy and module instance.
const uiStates = (globalThis.__nbagentTimelines ??= new Map());

class TimelineView {
  constructor(el, send, ui) {
    this.send = send;
    this.root = h("div", "nbagent nba-timeline");
    this.head = h("div", "nba-head");
    this.title = h("span", null, "Timeline");
    this.count = h("span", "nba-muted");
    this.state = badge("", "idle", "nba-status");
    this.head.append(this.title, this.count, h("span", "nba-grow"), this.state);
    this.scroll = h("div", "nba-scroll");
    this.root.append(this.head, this.scroll);
    el.append(this.root);
    this.open = ui.open; // turn id -> expanded?
    this.details = ui.details; // ids of items whose full content is shown
  }

  reset(snapshot) {
    const t0 = performance.now();
    this.seq = snapshot.seq;
    this.waiting = false;
    this.nodes = new Map();
    this.kids = new Map();
    this.els = new Map();
    this.empty = h("div", "nba-empty", "No turns yet: inject() queues context, followup() and steer() start the model.");
    this.scroll.replaceChildren(this.empty);
    const turns = [];
    for (const n of snapshot.nodes) {
      this.index(n);
      if (n.type === "turn") turns.push(n.id);
    }
    const keep = new Set(turns.slice(-KEEP_OPEN));
    for (const id of turns) if (!this.open.has(id)) this.open.set(id, keep.has(id));
    const frag = document.createDocumentFragment();
    for (const id of this.kids.get(null) || []) frag.append(this.build(this.nodes.get(id)));
    this.scroll.append(frag);
    this.updateHead();
    this.scroll.scrollTop = this.scroll.scrollHeight;
    this.root.dataset.seq = String(this.seq);
    this.root.dataset.renderMs = (performance.now() - t0).toFixed(1);
  }

  index(n) {
    this.nodes.set(n.id, n);
    const p = n.parent ?? null;
    if (!this.kids.has(p)) this.kids.set(p, []);
    this.kids.get(p).push(n.id);
  }

  updateHead() {
    const turns = this.kids.get(null)?.filter((id) => this.nodes.get(id).type === "turn") || [];
    const last = turns.length ? this.nodes.get(turns[turns.length - 1]) : null;
    this.count.textContent = `${turns.length} turn${turns.length === 1 ? "" : "s"}`;
    this.empty.hidden = this.scroll.childElementCount > 1;
    const status = last && last.status === "running" ? "running" : "idle";
    this.state.textContent = status;
    this.state.dataset.status = status;
  }

  // -- incremental updates -----------------------------------------------------------------------

  patch(msg) {
    if (this.waiting) return;
    if (msg.from !== this.seq) {
      this.waiting = true;
      this.send({ type: "resync", seq: this.seq });
      return;
    }
    const atBottom = this.scroll.scrollTop + this.scroll.clientHeight >= this.scroll.scrollHeight - 40;
    for (const op of msg.ops) this.applyOp(op);
    this.seq = msg.to;
    this.root.dataset.seq = String(this.seq);
    this.updateHead();
    if (atBottom) this.scroll.scrollTop = this.scroll.scrollHeight;
    const stats = globalThis.__nbagentStats;
    if (stats) stats.push({ applied: Date.now(), time: msg.time, ops: msg.ops.length });
  }

  applyOp(op) {
    if (op[0] === "add") {
      const n = op[1];
      this.index(n);
      if (n.type === "turn") {
        this.open.set(n.id, true);
        this.scroll.append(this.build(n));
      } else {
        const box = this.container(n.parent);
        if (box) box.append(this.build(n));
        else this.refreshHead(n.parent);
      }
    } else if (op[0] === "set") {
      const n = this.nodes.get(op[1]);
      if (!n) return;
      Object.assign(n, op[2]);
      this.refresh(n);
    } else if (op[0] === "text") {
      const n = this.nodes.get(op[1]);
      if (!n) return;
      n[op[2]] = (n[op[2]] || "") + op[3];
      const e = this.els.get(n.id);
      if (e && op[2] === "text") e._text.appendData(op[3]);
      else if (e) this.refresh(n);
    }
  }

  // The element children of `id` go into, or null while its turn is collapsed (built on expand).
  container(id) {
    if (id === null || id === undefined) return this.scroll;
    const e = this.els.get(id);
    return e && e._body ? e._body : null;
  }

  refreshHead(id) {
    let n = this.nodes.get(id);
    while (n && n.type !== "turn") n = this.nodes.get(n.parent);
    if (n) this.refresh(n);
  }

  refresh(n) {
    const old = this.els.get(n.id);
    if (!old) return this.refreshHead(n.parent);
    if (n.type === "turn") return this.fillTurnHead(old, n);
    if (n.type === "step") return;
    old.replaceWith(this.build(n));
  }

  // -- building elements -------------------------------------------------------------------------

  build(n) {
    const builder = this[`build_${n.type}`];
    const e = builder ? builder.call(this, n) : h("div", "nba-mark", `${n.type}`);
    e.dataset.id = n.id;
    this.els.set(n.id, e);
    if (this.details.has(n.id)) this.toggle(e, n);
    return e;
  }

  build_turn(n) {
    const e = h("div", "nba-turn");
    const head = h("div", "nba-turn-head");
    e._head = head;
    e.append(head);
    head.addEventListener("click", () => {
      this.open.set(n.id, !this.open.get(n.id));
      this.fillTurnHead(e, n);
      this.fillTurnBody(e, n);
    });
    this.fillTurnHead(e, n);
    this.fillTurnBody(e, n);
    return e;
  }

  fillTurnHead(e, n) {
    const open = this.open.get(n.id);
    e.classList.toggle("nba-running", n.status === "running");
    e.dataset.status = n.status;
    const status = badge("", n.status, "nba-status");
    status.dataset.status = n.status;
    const parts = [h("span", "nba-caret", open ? "▾" : "▸"), h("b", null, `Turn ${n.turn}`)];
    parts.push(h("span", "nba-line", n.title || ""));
    const code = n.reason && n.reason.error ? n.reason.error.code : n.reason && n.reason.reason ? n.reason.reason.kind : null;
    if (code) parts.push(h("span", "nba-muted", code));
    parts.push(h("span", "nba-muted", `${n.steps} step${n.steps === 1 ? "" : "s"}`));
    if (n.end) parts.push(h("span", "nba-muted", `${((n.end - n.start) / 1000).toFixed(1)} s`));
    parts.push(status);
    e._head.replaceChildren(...parts);
  }

  fillTurnBody(e, n) {
    const open = this.open.get(n.id);
    if (!open) {
      if (e._body) e._body.remove();
      e._body = null;
      return;
    }
    if (e._body) return;
    e._body = h("div", "nba-turn-body");
    this.buildChildren(n.id, e._body);
    e.append(e._body);
  }

  buildChildren(id, box) {
    const frag = document.createDocumentFragment();
    for (const kid of this.kids.get(id) || []) frag.append(this.build(this.nodes.get(kid)));
    box.append(frag);
  }

  build_step(n) {
    const e = h("div", "nba-step");
    e.append(h("div", "nba-step-head", `step ${n.step}`));
    e._body = e;
    this.buildChildren(n.id, e);
    return e;
  }

  item(cls, n, parts) {
    const e = h("div", "nba-item " + cls);
    const row = h("div", "nba-row");
    row.append(...parts);
    e.append(row);
    row.addEventListener("click", () => this.toggle(e, this.nodes.get(n.id)));
    return e;
  }

  build_message(n) {
    const parts = [badge(n.kind, n.kind, n.via_tool ? "nba-via" : "")];
    if (n.via_tool) parts.push(h("span", "nba-muted", `via ${n.via_tool}`));
    if (n.label) parts.push(h("span", "nba-label", n.label));
    parts.push(h("span", "nba-line", n.first_line), h("span", "nba-size", size(n.size)));
    const e = this.item("nba-msg", n, parts);
    e.dataset.kind = n.kind;
    return e;
  }

  build_assistant(n) {
    const text = h("span", "nba-answer-text");
    const node = document.createTextNode(n.text || (n.reasoning ? "(reasoning)" : ""));
    text.append(node);
    const parts = [badge("assistant")];
    if (n.interrupted) parts.push(h("span", "nba-muted", "interrupted"));
    parts.push(text);
    if (n.calls) parts.push(h("span", "nba-muted", `${n.calls} call${n.calls === 1 ? "" : "s"}`));
    const e = this.item("nba-answer", n, parts);
    e._text = node;
    e.classList.toggle("nba-streaming", !!n.streaming);
    e.classList.toggle("nba-failed", !!n.failed);
    return e;
  }

  build_tool(n) {
    const result = n.result === null ? "…" : (n.error_code ? `${n.error_code}: ` : "") + n.result.split("\n")[0];
    const parts = [badge("tool", "tool"), h("b", null, n.name), h("span", "nba-tool-args", n.arguments)];
    parts.push(h("span", "nba-muted", "→"), h("span", "nba-line", result));
    const e = this.item("nba-tool", n, parts);
    e.classList.toggle("nba-tool-error", !!n.is_error);
    return e;
  }

  build_mark(n) {
    const e = h("div", "nba-mark", n.text);
    e.dataset.mark = n.mark;
    return e;
  }

  toggle(e, n) {
    if (e._detail) {
      e._detail.remove();
      e._detail = null;
      e.classList.remove("nba-open");
      this.details.delete(n.id);
      return;
    }
    this.details.add(n.id);
    const d = h("div", "nba-detail");
    d.addEventListener("click", (ev) => ev.stopPropagation());
    if (n.type === "message") {
      d.append(h("div", "nba-source", JSON.stringify(n.source)), h("pre", null, n.text));
    } else if (n.type === "assistant") {
      if (n.reasoning) d.append(h("div", "nba-source", "reasoning"), h("pre", null, n.reasoning));
      d.append(h("pre", null, n.text));
    } else if (n.type === "tool") {
      d.append(h("div", "nba-source", `${n.name} · call ${n.call_id} · arguments`), h("pre", null, n.arguments));
      d.append(h("div", "nba-source", n.is_error ? `result (error ${n.error_code || ""})` : "result"));
      d.append(h("pre", null, n.result ?? "(running)"));
    }
    e.append(d);
    e._detail = d;
    e.classList.add("nba-open");
  }
}

function render({ model, el }) {
  const uid = model.get("uid");
  if (!uiStates.has(uid)) uiStates.set(uid, { open: new Map(), details: new Set(), views: 0 });
  const ui = uiStates.get(uid);
  const view = new TimelineView(el, (msg) => model.send(msg), ui);
  view.root.dataset.generation = String(++ui.views); // one more each time the output is re-published
  view.reset(model.get("snapshot"));
  const onSnapshot = () => view.reset(model.get("snapshot"));
  const onMsg = (msg) => {
    if (msg.type === "patch") view.patch(msg);
    else if (msg.type === "reset" && (view.waiting || msg.snapshot.seq !== view.seq)) view.reset(msg.snapshot);
  };
  model.on("change:snapshot", onSnapshot);
  model.on("msg:custom", onMsg);
  model.send({ type: "hello", seq: view.seq });
  return () => {
    model.off("change:snapshot", onSnapshot);
    model.off("msg:custom", onMsg);
  };
}

export default { render };
