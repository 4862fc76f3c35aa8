// nbagent timeline widget: paints the timeline view model (nbagent/views/timeline.py) and applies
// the patches the kernel sends for new events ("add" / "set" / "text"). Every word, size, outcome
// and reason arrives ready-made in the nodes (docs/timeline-json.md): this module only paints.
// The rows and items come from the shared painter (painter.js, with the "What if…" editor:
// labextension/widgets.config.mjs bundles them into this widget's module). The default export runs
// once per widget model: what the user opened and where they scrolled live there, and survive the
// output being re-published.

import { badge, diffView, el as h, leaf, markdownNodes, markPainted, meterLegend, paintStepHead, pill, plainAnswer, repaintTurn, setWhy, shown, stepBox, turnBox } from "./painter.js";
import { attributionBars, whatIfEditor } from "./whatif_editor.js";

const KEEP_OPEN = 3; // the last turns shown opened at first render (older ones start collapsed)

const turnsLast = (view) => {
  const top = view.kids.get(null) || [];
  for (let i = top.length - 1; i >= 0; i--) if (view.nodes.get(top[i]).type === "turn") return top[i];
  return null;
};

class TimelineView {
  constructor(el, ui, send) {
    this.ui = ui;
    this.send = send;
    this.root = h("div", "nbagent nba-timeline");
    const head = h("div", "nba-head");
    this.count = h("span", "nba-muted");
    this.state = pill("idle", "idle");
    head.append(h("span", "nba-title", "Timeline"), this.count, h("span", "nba-grow"), this.state);
    this.legend = h("div", "nba-legend-box"); // the bars' colour key, once per timeline
    this.barKinds = new Set(); // the source kinds the steps' bars hold (the legend lists them)
    this.scroll = h("div", "nba-scroll");
    this.scroll.addEventListener("scroll", () => {
      if (!this.root.isConnected || this.resetting) return; // only where the user scrolled to
      ui.scrollTop = this.scroll.scrollTop;
      ui.atBottom = this.atBottom();
    });
    this.root.append(head, this.legend, this.scroll);
    el.append(this.root);
    this.els = new Map(); // node id -> element
    this.bodies = new Map(); // turn or step id -> element its children go into (built turns only)
    this.texts = new Map(); // answer id -> its streaming text node
    // What the shared painter may use: opened items and raw answers (kept per model), Markdown.
    this.ctx = { opened: ui.details, raw: ui.raw, markdown: ui.markdown, renders: ui.renders, leaves: { proposal: proposalRow } };
  }

  atBottom() {
    return this.scroll.scrollTop + this.scroll.clientHeight >= this.scroll.scrollHeight - 40;
  }

  reset(snapshot) {
    const t0 = performance.now();
    this.resetting = true;
    for (const [id, e] of this.els) {
      // What is opened now is what the user sees: keep it (a toggle event may not have run yet).
      if (e.tagName === "DETAILS" && e.classList.contains("nba-item")) {
        if (e.open) this.ui.details.add(id);
        else this.ui.details.delete(id);
      }
    }
    this.seq = snapshot.seq;
    this.waiting = false;
    this.nodes = new Map();
    this.barKinds = new Set();
    this.kids = new Map();
    this.els.clear();
    this.bodies.clear();
    this.texts.clear();
    this.empty = h("div", "nba-empty", "No turns yet: inject() queues context, followup() and steer() start the model.");
    this.scroll.replaceChildren(this.empty);
    const turns = [];
    for (const n of snapshot.nodes) {
      this.index(n);
      if (n.type === "turn") turns.push(n.id);
    }
    const recent = new Set(turns.slice(-KEEP_OPEN));
    for (const id of turns) if (!this.ui.open.has(id)) this.ui.open.set(id, recent.has(id));
    const frag = document.createDocumentFragment();
    for (const id of this.kids.get(null) || []) frag.append(this.build(this.nodes.get(id)));
    this.scroll.append(frag);
    this.updateHead();
    // Open at the recent turns: the end, or the last turn's head when that turn is taller than the
    // view (or where the user was, when the output is re-published).
    const place = () => {
      if (this.ui.scrollTop !== null && !this.ui.atBottom) this.scroll.scrollTop = this.ui.scrollTop;
      else this.scrollToRecent();
    };
    place(); // and again once the view is laid out in the page (render may run before it is attached)
    this.root.dataset.seq = String(this.seq);
    this.root.dataset.renderMs = (performance.now() - t0).toFixed(1);
    markPainted(this.root);
    requestAnimationFrame(() => {
      place();
      this.resetting = false;
    });
  }

  scrollToRecent() {
    const last = turnsLast(this);
    this.scroll.scrollTop = this.scroll.scrollHeight;
    const el = last && this.els.get(last);
    if (!el) return;
    const above = el.getBoundingClientRect().top - this.scroll.getBoundingClientRect().top;
    if (above < 0) this.scroll.scrollTop += above;
  }

  index(n) {
    this.nodes.set(n.id, n);
    this.noteBar(n);
    const p = n.parent ?? null;
    if (!this.kids.has(p)) this.kids.set(p, []);
    this.kids.get(p).push(n.id);
  }

  // A step's bar (on arrival, or when its estimate is set) may bring a kind the legend lacks.
  noteBar(n) {
    if (n.type !== "step" || !Array.isArray(n.bar)) return;
    for (const p of n.bar) this.barKinds.add(String(p.kind));
  }

  paintLegend() {
    if (this.legend.dataset.kinds === [...this.barKinds].sort().join(" ")) return;
    this.legend.dataset.kinds = [...this.barKinds].sort().join(" ");
    const legend = meterLegend([{ type: "step", bar: [...this.barKinds].map((kind) => ({ kind })) }]);
    this.legend.replaceChildren(...(legend ? [legend] : []));
  }

  updateHead() {
    this.paintLegend();
    const turns = (this.kids.get(null) || []).filter((id) => this.nodes.get(id).type === "turn");
    const last = turns.length ? this.nodes.get(turns[turns.length - 1]) : null;
    this.count.textContent = `${turns.length} turn${turns.length === 1 ? "" : "s"}`;
    this.empty.hidden = this.scroll.childElementCount > 1;
    const running = last && last.status === "running";
    this.state.textContent = running ? `turn ${last.turn} running` : "idle";
    this.state.dataset.status = running ? "running" : "idle";
  }

  // -- incremental updates -----------------------------------------------------------------------

  patch(msg) {
    if (this.waiting) return;
    if (msg.from !== this.seq) {
      this.waiting = true;
      this.send({ type: "resync", seq: this.seq });
      return;
    }
    const follow = this.atBottom();
    for (const op of msg.ops) this.applyOp(op);
    this.seq = msg.to;
    this.updateHead();
    if (follow) this.scroll.scrollTop = this.scroll.scrollHeight;
    // What benchmarks and tests read: the events shown, and when the last batch was painted.
    this.root.dataset.seq = String(this.seq);
    this.root.dataset.eventTime = String(msg.time);
    this.root.dataset.paintedAt = String(Date.now());
  }

  applyOp(op) {
    if (op[0] === "add") {
      const n = op[1];
      this.index(n);
      if (n.type === "turn") {
        this.ui.open.set(n.id, true);
        this.scroll.append(this.build(n));
        this.collapseOld();
      } else {
        const box = this.bodies.get(n.parent ?? null) || (n.parent == null ? this.scroll : null);
        if (box) box.append(this.build(n));
      }
    } else if (op[0] === "set") {
      const n = this.nodes.get(op[1]);
      if (!n) return;
      Object.assign(n, op[2]);
      this.noteBar(n);
      this.refresh(n);
    } else if (op[0] === "text") {
      const n = this.nodes.get(op[1]);
      if (!n) return;
      n[op[2]] = (n[op[2]] || "") + op[3];
      const text = this.texts.get(n.id);
      if (text && op[2] === "text") text.appendData(shown(op[3]));
      else this.refresh(n);
    }
  }

  // A new turn keeps KEEP_OPEN turns opened: the oldest one opened automatically closes (turns the
  // user opened stay open).
  collapseOld() {
    const turns = (this.kids.get(null) || []).filter((id) => this.nodes.get(id).type === "turn");
    const old = turns[turns.length - 1 - KEEP_OPEN];
    if (old === undefined || this.ui.open.get(old) !== true) return;
    this.ui.open.set(old, false);
    const e = this.els.get(old);
    if (e) e.open = false;
  }

  refresh(n) {
    const old = this.els.get(n.id);
    if (!old) return;
    if (n.type === "step") return paintStepHead(old.querySelector(":scope > .nba-step-head"), n);
    if (n.type === "turn") {
      repaintTurn(old, this.bodies.get(n.id), n);
      if (this.bodies.has(n.id)) this.turnTools(this.bodies.get(n.id), n);
      return;
    }
    old.replaceWith(this.build(n));
  }

  // -- the "What if…" editor and "Which context mattered?" on a finished turn (SPEC §11.4, §11.5) --
  // Their elements live in `ui` (per model), so a re-rendered output puts the same ones back.

  turnTools(body, n) {
    if (this.ui.nested || n.status === "running" || !Number.isInteger(n.turn)) return;
    let tools = this.ui.tools.get(n.id);
    if (!tools) {
      tools = h("div", "nba-turn-tools-box", null, { turn: n.turn });
      const bar = h("div", "nba-turn-tools");
      const button = (label, action, onClick) => {
        const b = h("button", "jp-Button jp-mod-minimal jp-mod-small", label, { action });
        b.type = "button";
        b.addEventListener("click", onClick);
        return b;
      };
      const place = h("div", "nba-turn-tool-place");
      bar.append(
        button("What if…", "whatif", () => this.askPlan(n.turn, place)),
        button("Which context mattered?", "why", () => this.askWhy(n.turn, place)),
      );
      tools.append(bar, place);
      this.ui.tools.set(n.id, tools);
      this.ui.places.set(n.turn, place);
    }
    if (tools.parentNode !== body) body.insertBefore(tools, body.querySelector(":scope > .nba-why")?.nextSibling || body.firstChild);
  }

  askPlan(turn, place) {
    const open = place.querySelector(":scope > .nba-whatif");
    if (open) return open.querySelector(".nba-whatif-arrival, input")?.focus();
    place.replaceChildren(h("span", "nba-muted", "reading the turn's arrivals…"));
    this.send({ type: "whatif-plan", turn });
  }

  askWhy(turn, place) {
    place.replaceChildren(h("span", "nba-muted", "reading the turn's context…"));
    this.send({ type: "why-plan", turn });
  }

  onEditorMsg(msg) {
    const place = this.ui.places.get(msg.turn);
    const run = msg.key !== undefined ? this.ui.runs.get(msg.key) : null;
    if (msg.type === "whatif-plan" && place) {
      const editor = whatIfEditor(msg.plan, {
        replay: (edits, area) => this.startReplay(edits, area, editor),
        close: () => place.replaceChildren(),
      });
      place.replaceChildren(editor.root);
      editor.root.querySelector(".nba-whatif-arrival, input")?.focus();
    } else if (msg.type === "whatif-started" && run) {
      run.editor.say(`replaying turn ${msg.turn} in fork ${String(msg.fork).slice(0, 8)}…`, "replaying");
      run.view.reset(msg.snapshot);
      run.view.root.querySelector(".nba-title").textContent = `Replay of turn ${msg.turn} · fork ${String(msg.fork).slice(0, 8)}`;
    } else if ((msg.type === "whatif-patch" || msg.type === "whatif-reset") && run && run.view.seq !== undefined) {
      if (msg.type === "whatif-patch") run.view.patch(msg);
      else run.view.reset(msg.snapshot);
      if (!run.area.dataset.firstRowMs && run.view.scroll.querySelector(".nba-item, .nba-mark")) {
        run.area.dataset.firstRowMs = (performance.now() - run.t0).toFixed(1); // what the benchmark reads
      }
    } else if (msg.type === "whatif-done" && run) {
      const late = (msg.late || []).length ? ` · ${msg.late.length} arrival(s) never reached, pending after` : "";
      run.editor.say(`replayed turn ${msg.turn}: ${msg.outcome || "ended"}${late} · the diff is below`, "done");
      const diff = h("div", "nba-whatif-diff");
      diff.append(diffView(msg.diff || {}));
      run.area.append(diff);
      run.done();
    } else if (msg.type === "whatif-error") {
      if (run) {
        run.editor.say(msg.message, "failed");
        run.done();
      } else if (place) place.replaceChildren(h("div", "nba-whatif-error", msg.message));
    } else if (msg.type === "why-plan" && place) {
      this.paintWhyPlan(msg, place);
    } else if (msg.type === "why-done" && place) {
      const box = place.querySelector(":scope > .nba-why-box") || place;
      box.querySelector(".nba-why-status")?.replaceChildren();
      box.append(attributionBars(msg.result));
    } else if (msg.type === "why-error" && place) {
      (place.querySelector(".nba-why-status") || place).replaceChildren(h("span", "nba-whatif-error", msg.message));
    }
  }

  startReplay(edits, area, editor) {
    const key = `${edits.turn}-${++this.ui.replays}`;
    area.replaceChildren();
    delete area.dataset.firstRowMs;
    const ui = { open: new Map(), details: new Set(), raw: new Set(), markdown, renders, scrollTop: null, atBottom: true, tools: new Map(), places: new Map(), runs: new Map(), replays: 0, nested: true };
    const view = new TimelineView(area, ui, (m) => this.send({ type: "whatif-resync", key, seq: m.seq }));
    view.root.dataset.replay = key;
    return new Promise((done) => {
      this.ui.runs.set(key, { area, editor, view, t0: performance.now(), done });
      this.send({ type: "whatif-replay", key, ...edits });
    });
  }

  paintWhyPlan(msg, place) {
    const box = h("div", "nba-why-box", null, { turn: msg.turn });
    box.append(h("pre", "nba-why-plan", msg.text));
    const status = h("div", "nba-why-status");
    const go = h("button", "jp-Button jp-mod-accept jp-mod-small", `Run ${msg.runs} replays`, { action: "why-run" });
    go.type = "button";
    go.addEventListener("click", () => {
      go.disabled = true;
      status.replaceChildren(h("span", "nba-muted", `running ${msg.runs} replays…`));
      this.send({ type: "why-run", turn: msg.turn });
    });
    box.append(go, status);
    place.replaceChildren(box);
  }

  // -- building elements (the shared painter: the same structure and classes as the static HTML) --

  build(n) {
    let e;
    if (n.type === "turn") e = this.buildTurn(n);
    else if (n.type === "step") e = this.buildStep(n);
    else if (n.type === "assistant") e = this.buildAnswer(n);
    else e = leaf(n, this.ctx);
    if (!e) return document.createComment(n.type); // a node type this version has no words for
    e.dataset.id = n.id;
    this.els.set(n.id, e);
    return e;
  }

  buildTurn(n) {
    const { box: e } = turnBox(n);
    e.lastChild.remove(); // the body is built when the turn is first opened
    e.open = !!this.ui.open.get(n.id);
    e.addEventListener("toggle", () => {
      // A toggle the view made itself matches the state it recorded; any other is the user's.
      if (e.open !== !!this.ui.open.get(n.id)) this.ui.open.set(n.id, e.open ? "user" : false);
      if (e.open) this.fillBody(e, this.nodes.get(n.id));
    });
    if (e.open) this.fillBody(e, n);
    return e;
  }

  fillBody(e, n) {
    if (this.bodies.has(n.id)) return;
    const body = h("div", "nba-turn-body");
    this.bodies.set(n.id, body);
    setWhy(body, n);
    this.turnTools(body, n);
    this.buildChildren(n.id, body);
    e.append(body);
  }

  buildChildren(id, box) {
    const frag = document.createDocumentFragment();
    for (const kid of this.kids.get(id) || []) frag.append(this.build(this.nodes.get(kid)));
    box.append(frag);
  }

  buildStep(n) {
    const e = stepBox(n);
    this.bodies.set(n.id, e);
    this.buildChildren(n.id, e);
    return e;
  }

  // A streaming answer is text whose node grows with each "text" op; a whole one is Markdown.
  buildAnswer(n) {
    if (!n.streaming && n.text) return leaf(n, this.ctx);
    const e = plainAnswer(n, this.ctx);
    const text = e.querySelector(".nba-answer-text");
    if (!text.firstChild) text.append(document.createTextNode(""));
    this.texts.set(n.id, text.firstChild);
    return e;
  }
}

// A proposed cell (SPEC §9.7; the lab extension's proposal.ts paints the same row): its code as
// text, Insert below / Insert and run (a bubbling "nbagent-proposal" DOM event the lab extension
// answers; anywhere else the row says to copy) and Copy.
function proposalRow(n) {
  const box = h("div", "nba-item nba-proposal");
  box.dataset.proposal = n.proposal;
  box.dataset.state = "proposed";
  const row = h("div", "nba-row");
  row.append(badge("notebook", `proposed cell ${n.proposal}`));
  if (n.note) row.append(h("span", "nba-line", n.note));
  const said = h("span", "nba-muted nba-proposal-said");
  const actions = h("div", "nba-proposal-actions");
  const button = (action, label, onClick, title) => {
    const b = h("button", "jp-Button jp-mod-minimal jp-mod-small nba-proposal-button", label);
    b.type = "button";
    b.dataset.action = action;
    b.dataset.title = title;
    b.title = title;
    b.addEventListener("click", () => onClick(b));
    return b;
  };
  // Disabled inserts look disabled (nbagent.css) and say why in their tooltip.
  const HELD = "Already inserted: this notebook holds this proposal";
  const hold = (why) =>
    actions.querySelectorAll("[data-action^='insert']").forEach((b) => {
      b.disabled = why !== null;
      b.title = why === null ? b.dataset.title : why;
    });
  const insert = (run) => (b) => {
    hold("Inserting…");
    const settle = (words, inserted) => {
      said.textContent = words;
      if (inserted) box.dataset.state = run ? "inserted-and-ran" : "inserted";
      hold(inserted ? HELD : null);
    };
    const detail = { proposal: n.proposal, code: n.code, run, cellId: (n.cell && n.cell.cell_id) || null, settle };
    if (b.dispatchEvent(new CustomEvent("nbagent-proposal", { bubbles: true, cancelable: true, detail }))) {
      settle("inserting needs this notebook open in JupyterLab or Notebook 7: use Copy", false);
    }
  };
  const copy = () =>
    (navigator.clipboard ? navigator.clipboard.writeText(n.code) : Promise.reject(new Error("no clipboard"))).then(
      () => (said.textContent = "copied"),
      () => (said.textContent = "could not copy: select the code above"),
    );
  actions.append(
    button("insert", "Insert below", insert(false), "Insert this cell below the cell that asked"),
    button("insert-and-run", "Insert and run", insert(true), "Insert this cell below the cell that asked, and run it"),
    button("copy", "Copy", copy, "Copy the code to the clipboard"),
    said,
  );
  box.append(row, h("pre", "nba-proposal-code", n.code), actions);
  if (n.done === "inserted" || n.done === "inserted-and-ran") {
    // The log says the user inserted it (a notebook message): say where, and offer Copy only.
    box.dataset.state = n.done;
    const where = Number.isInteger(n.done_below) ? `below In [${n.done_below}]` : "below the cell that asked";
    said.textContent = `${n.done === "inserted" ? "inserted" : "inserted and ran"} ${where}`;
    hold(HELD);
  }
  return box;
}

// Whole answers arrive with their Markdown as a tree of data ("md", made by the kernel with mistune:
// nbagent/views/markdown_tree.py); the painter builds it with DOM calls and never parses HTML.
const renders = (n) => Array.isArray(n.md);
const markdown = (_source, host, n) => host.replaceChildren(...markdownNodes(n.md));

export default () => {
  // Per model: what the user opened and where they scrolled, kept across re-rendered views.
  const ui = { open: new Map(), details: new Set(), raw: new Set(), markdown, renders, scrollTop: null, atBottom: true, views: 0,
    tools: new Map(), places: new Map(), runs: new Map(), replays: 0 };
  return {
    render({ model, el }) {
      const view = new TimelineView(el, ui, (msg) => model.send(msg));
      view.root.dataset.generation = String(++ui.views); // one more each time the output is re-published
      view.reset(model.get("snapshot"));
      const onSnapshot = () => view.reset(model.get("snapshot"));
      const onMsg = (msg) => {
        if (typeof msg.type === "string" && /^(whatif|why)-/.test(msg.type)) view.onEditorMsg(msg);
        else if (msg.type === "patch") view.patch(msg);
        else if (msg.type === "reset" && (view.waiting || msg.snapshot.seq !== view.seq)) view.reset(msg.snapshot);
      };
      model.on("change:snapshot", onSnapshot);
      model.on("msg:custom", onMsg);
      model.send({ type: "hello", seq: view.seq });
      return () => {
        model.off("change:snapshot", onSnapshot);
        model.off("msg:custom", onMsg);
      };
    },
  };
};
