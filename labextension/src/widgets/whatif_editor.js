// The "What if…" editor (SPEC §11.4) and the attribution bars (§11.5), shared by the timeline widget
// (timeline.js imports it; labextension/widgets.config.mjs bundles it into the widget's module) and
// the lab extension's session tab (labextension/src/whatif.ts imports it).
//
// The editor paints a finished turn's arrivals (nbagent/forks/editor_plan.py: every word
// ready-made) grouped by the step that saw them; the person drags an arrival to another step
// (Alt+ArrowUp/Down from the keyboard), unticks one to drop it, or types a message into a step,
// then presses Replay. Steps are "seen by step N" (1-based), as every view counts them. Every
// string goes into the DOM through the painter's `el` (textContent), never as HTML.

import { badge, el } from "./painter.js";

/** The edits in the page's terms: `drop` ids, `move` {id: seen_by}, `add` [{text, seen_by}]. */
export function whatIfEdits(state) {
  const drop = [];
  const move = {};
  for (const a of state.arrivals) {
    if (!a.kept) drop.push(a.id);
    else if (a.seen_by !== a.was) move[a.id] = a.seen_by;
  }
  return { turn: state.turn, drop, move, add: state.added.map((m) => ({ text: m.text, seen_by: m.seen_by })) };
}

/** The magic lines doing the same replay (what the editor offers to copy without a kernel). */
export function whatIfLines(edits) {
  let line = `%agent replay ${edits.turn}`;
  if (edits.drop.length) line += " --drop " + edits.drop.map((i) => i.slice(0, 8)).join(" ");
  const moved = Object.entries(edits.move);
  if (moved.length) line += " --move " + moved.map(([i, n]) => `${i.slice(0, 8)}=${n}`).join(" ");
  const lines = [`%agent fork --before-turn ${edits.turn}`, `${line} --wait`, `%agent diff ${edits.turn} ${edits.turn}`];
  if (edits.add.length) lines.splice(2, 0, "# added messages have no magic: agent.replay(turn, add=[(text, seen_by - 1)])");
  return lines.join("\n");
}

function wiButton(label, cls, onClick) {
  const b = el("button", `jp-Button jp-mod-small ${cls || "jp-mod-minimal"}`, label);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

/**
 * The editor of `plan` (`{turn, steps: [{step, label}], arrivals: [...]}`). `host.replay(edits)`
 * runs the replay (absent: no kernel; the editor offers the lines to copy); `host.close()` closes
 * it. Returns `{root, replayArea, say(words, status)}`: the host paints the running replay and its
 * diff into `replayArea`.
 */
export function whatIfEditor(plan, host) {
  const state = {
    turn: plan.turn,
    arrivals: (plan.arrivals || []).map((a) => ({ ...a, was: a.seen_by, kept: true })),
    added: [],
  };
  const steps = (plan.steps || []).map((s) => s.step);
  const root = el("div", "nba-whatif", null, { turn: plan.turn });
  root.setAttribute("role", "group");
  root.setAttribute("aria-label", `What if… turn ${plan.turn}`);
  const head = el("div", "nba-whatif-head");
  head.append(
    el("b", null, `What if… turn ${plan.turn}`),
    el("span", "nba-muted", "drag an arrival to another step (Alt+↑/↓), untick it to drop it, or type a message into a step"),
    el("span", "nba-grow"),
  );
  if (host.close) head.append(wiButton("Close", "jp-mod-minimal", () => host.close()));
  const board = el("div", "nba-whatif-steps");
  const lines = el("pre", "nba-whatif-lines");
  const said = el("span", "nba-muted nba-whatif-said");
  said.setAttribute("role", "status");
  let dragging = null;
  let refocus = null;

  const paintLines = () => (lines.textContent = whatIfLines(whatIfEdits(state)));
  const moveTo = (a, step) => {
    if (!a.movable || !steps.includes(step) || step === a.seen_by) return;
    a.seen_by = step;
    refocus = a.id;
    paint();
  };

  const arrivalRow = (a) => {
    const row = el("div", "nba-whatif-arrival", null, { id: a.id, kind: a.source, seenBy: a.seen_by });
    row.dataset.kept = String(a.kept);
    if (a.seen_by !== a.was) row.dataset.moved = "true";
    row.tabIndex = 0;
    row.draggable = !!a.movable && a.kept;
    const tick = el("input", "nba-whatif-keep");
    tick.type = "checkbox";
    tick.checked = a.kept;
    tick.setAttribute("aria-label", `keep ${a.label} in the replay`);
    tick.addEventListener("change", () => {
      a.kept = tick.checked;
      refocus = null;
      paint();
      board.querySelector(`.nba-whatif-arrival[data-id="${CSS.escape(a.id)}"] .nba-whatif-keep`)?.focus();
    });
    row.append(tick, badge(a.source, a.badge), el("span", "nba-label", a.label));
    const line = el("span", "nba-line", a.preview);
    line.title = a.preview;
    row.append(line, el("span", "nba-muted", a.pending ? "pending before the turn" : a.action));
    if (a.seen_by !== a.was) row.append(el("span", "nba-diff-where", `was step ${a.was}`));
    if (!a.kept) row.append(el("span", "nba-diff-where", "dropped"));
    row.setAttribute("aria-label", `${a.label}: ${a.preview}; seen by step ${a.seen_by}${a.kept ? "" : ", dropped"}`);
    row.addEventListener("keydown", (ev) => {
      if (!ev.altKey || (ev.key !== "ArrowUp" && ev.key !== "ArrowDown")) return;
      ev.preventDefault();
      moveTo(a, a.seen_by + (ev.key === "ArrowUp" ? -1 : 1));
    });
    row.addEventListener("dragstart", (ev) => {
      dragging = a;
      ev.dataTransfer.setData("application/x-nbagent-arrival", a.id);
      ev.dataTransfer.effectAllowed = "move";
    });
    row.addEventListener("dragend", () => (dragging = null));
    return row;
  };

  const addedRow = (m) => {
    const row = el("div", "nba-whatif-arrival nba-whatif-added", null, { seenBy: m.seen_by, kind: "user" });
    row.append(badge("user", "added"), el("span", "nba-line", m.text));
    row.append(wiButton("Remove", "jp-mod-minimal", () => {
      state.added.splice(state.added.indexOf(m), 1);
      paint();
    }));
    return row;
  };

  const stepBoxOf = (s) => {
    const box = el("div", "nba-whatif-step", null, { step: s.step });
    box.append(el("div", "nba-whatif-step-head", s.label));
    const mine = state.arrivals.filter((a) => a.seen_by === s.step);
    for (const a of mine) box.append(arrivalRow(a));
    for (const m of state.added.filter((x) => x.seen_by === s.step)) box.append(addedRow(m));
    if (!mine.length) box.append(el("span", "nba-muted nba-whatif-none", "nothing arrives here"));
    const input = el("input", "jp-mod-styled nba-whatif-new");
    input.type = "text";
    input.placeholder = `Type a message seen by step ${s.step}, then Enter`;
    input.setAttribute("aria-label", `a new message seen by step ${s.step}`);
    input.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter" || !input.value.trim()) return;
      ev.preventDefault();
      state.added.push({ text: input.value.trim(), seen_by: s.step });
      paint();
      board.querySelector(`.nba-whatif-step[data-step="${s.step}"] .nba-whatif-new`)?.focus();
    });
    box.append(input);
    box.addEventListener("dragover", (ev) => {
      if (!dragging) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = "move";
      box.classList.add("nba-drop");
    });
    box.addEventListener("dragleave", () => box.classList.remove("nba-drop"));
    box.addEventListener("drop", (ev) => {
      ev.preventDefault();
      box.classList.remove("nba-drop");
      if (dragging) moveTo(dragging, s.step);
      dragging = null;
    });
    return box;
  };

  function paint() {
    board.replaceChildren(...(plan.steps || []).map(stepBoxOf));
    paintLines();
    const e = whatIfEdits(state);
    const n = e.drop.length + Object.keys(e.move).length + e.add.length;
    root.dataset.edits = String(n);
    if (refocus) board.querySelector(`.nba-whatif-arrival[data-id="${CSS.escape(refocus)}"]`)?.focus();
    refocus = null;
  }

  const replayArea = el("div", "nba-whatif-replay");
  const actions = el("div", "nba-whatif-actions");
  const copy = wiButton("Copy lines", "jp-mod-minimal", () =>
    (navigator.clipboard ? navigator.clipboard.writeText(lines.textContent) : Promise.reject(new Error("no clipboard"))).then(
      () => (said.textContent = "copied"),
      () => (said.textContent = "could not copy: select the lines"),
    ),
  );
  const linesBox = el("details", "nba-whatif-copy");
  linesBox.append(el("summary", "nba-muted", host.replay ? "The same replay as magic lines" : "No kernel holds this session here: run these lines in its notebook"), lines, copy);
  if (host.replay) {
    const go = wiButton("Replay", "jp-mod-accept nba-whatif-go", () => {
      go.disabled = true;
      go.title = "a replay is running";
      root.dataset.state = "replaying";
      said.textContent = "forking and replaying…";
      Promise.resolve(host.replay(whatIfEdits(state), replayArea)).finally(() => {
        go.disabled = false;
        go.title = "";
      });
    });
    actions.append(go);
  } else {
    linesBox.open = true;
  }
  actions.append(said);
  root.append(head, board, actions, linesBox, replayArea);
  paint();
  const say = (words, status) => {
    said.textContent = words;
    if (status) root.dataset.state = status;
  };
  return { root, replayArea, say };
}

/**
 * The attribution bars (`{items: [{label, source, badge, score, score_text, meaningless, fork}],
 * noise_text, summary}`): one ranked bar per item, scores at or below the noise greyed and named
 * meaningless.
 */
export function attributionBars(a) {
  const root = el("div", "nba-why-bars", null, { turn: a.turn });
  root.append(el("div", "nba-muted", a.summary || ""));
  const list = el("ol", "nba-why-list");
  for (const it of a.items || []) {
    const li = el("li", "nba-why-item", null, { meaningless: it.meaningless ? "true" : "false", kind: it.source });
    const bar = el("span", "nba-why-bar");
    const fill = el("span", "nba-why-fill");
    fill.style.width = `${Math.round(Math.max(0, Math.min(1, Number(it.score) || 0)) * 100)}%`;
    bar.append(fill);
    bar.setAttribute("role", "img");
    bar.setAttribute("aria-label", `score ${it.score_text}`);
    li.append(badge(it.source, it.badge || it.source), el("span", "nba-label", it.label), bar, el("span", "nba-size", it.score_text));
    if (it.meaningless) li.append(el("span", "nba-muted", "at or below the noise: says nothing"));
    list.append(li);
  }
  root.append(list);
  if (a.noise_text) root.append(el("div", "nba-muted nba-why-noise", a.noise_text));
  return root;
}
