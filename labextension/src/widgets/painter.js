// nbagent's one painter in the browser: the rows and items of the view model (nbagent/views;
// docs/timeline-json.md), built once for every page that paints them. The anywidget widgets
// (timeline.js, inbox.js, approval.js, diff.js beside it: labextension/widgets.config.mjs bundles
// each with this module) and the JupyterLab extension (labextension/src/paint.ts imports this
// file; painter.d.ts gives its types) import it. The static HTML of nbagent/views/html.py builds the same structure and classes in Python
// (checked against this painter by tests/browser/test_views_browser.py).
//
// Every string from a node goes into the DOM as text (textContent, attributes), never as HTML:
// message content is data. Plain ES module: it imports nothing.

/** What a painted root carries once its first paint is done (a signal, not words). */
export const PAINTED = "nbaPainted";

/**
 * The bidirectional controls, each with the name its visible mark shows (BIDI_MARKS of
 * nbagent/views/escape.py): data cannot reorder what a view shows around it.
 */
const BIDI = {
  "\u202a": "LRE", "\u202b": "RLE", "\u202c": "PDF", "\u202d": "LRO", "\u202e": "RLO",
  "\u2066": "LRI", "\u2067": "RLI", "\u2068": "FSI", "\u2069": "PDI",
  "\u200e": "LRM", "\u200f": "RLM", "\u061c": "ALM",
};
const BIDI_RE = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g;

/** `value` as the text a view shows: each bidirectional control a visible mark (`⟨RLO⟩`). */
export function shown(value) {
  if (value === undefined || value === null) return "";
  return String(value).replace(BIDI_RE, (c) => `⟨${BIDI[c]}⟩`);
}

/** An element with a class and, optionally, text (always as text, through `shown`) and data attributes. */
export function el(tag, cls, text, data) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = shown(text);
  for (const [key, value] of Object.entries(data || {})) {
    if (value !== undefined && value !== null) e.dataset[key] = String(value);
  }
  return e;
}

const str = shown;

export function badge(kind, text, role) {
  return el("span", "nba-badge", text, { kind: kind || "unknown", role: role || undefined });
}

export function pill(status, text) {
  return el("span", "nba-pill", text, { status });
}

export function pre(text) {
  return el("pre", null, str(text));
}

function section(title, text) {
  return [el("div", "nba-source", title), pre(text)];
}

/**
 * Mark `root` painted (and say when): the page that hosts a painting waits on this attribute, never
 * on the words a view shows.
 */
export function markPainted(root) {
  root.dataset[PAINTED] = "true";
}

/**
 * An item: a one-line row that opens to its details, as the static HTML's `_details`. `detail` is
 * null (a plain row) or a function building the detail's nodes, called when the item is first
 * opened. `ctx.opened` (a Set of node ids) keeps which items the user opened across repaints.
 */
export function item(cls, row, detail, data, ctx) {
  if (!detail) {
    const box = el("div", "nba-item " + cls, null, data);
    const head = el("div", "nba-row");
    head.append(...row);
    box.append(head);
    return box;
  }
  const box = el("details", "nba-item " + cls, null, data);
  const head = el("summary", "nba-row");
  head.append(...row);
  box.append(head);
  const id = data && data.id;
  const opened = ctx && ctx.opened;
  const fill = () => {
    if (box.open && box.childElementCount === 1) {
      const body = el("div", "nba-detail");
      body.append(...detail());
      box.append(body);
    }
  };
  box.open = !!(opened && id !== undefined && opened.has(id));
  fill();
  box.addEventListener("toggle", () => {
    if (opened && id !== undefined) {
      if (box.open) opened.add(id);
      else opened.delete(id);
    }
    fill();
  });
  return box;
}

/** Badge, label, first line, `+N lines`, size (and a pending item's tokens): one message row. */
export function messageRow(n) {
  const row = [badge(str(n.kind), str(n.badge), str(n.role))];
  if (n.via) row.push(el("span", "nba-muted", `via ${n.via}`));
  if (n.label) row.push(el("span", "nba-label", str(n.label)));
  const line = el("span", "nba-line", str(n.first_line));
  line.title = str(n.first_line);
  row.push(line);
  if (n.more_text) row.push(el("span", "nba-more", str(n.more_text)));
  row.push(el("span", "nba-size", str(n.size_text)));
  if (n.tokens_text) row.push(el("span", "nba-size", str(n.tokens_text))); // the context meter (SPEC §12)
  return row;
}

/** A model-visible message of a step. */
export function messageItem(n, ctx) {
  return item("nba-msg", messageRow(n), () => [pre(n.text)], { id: n.id, kind: str(n.kind), role: str(n.role) }, ctx);
}

/** A pending inbox item (`extra`: elements after its row, e.g. a remove button). */
export function pendingItem(m, ctx, extra) {
  const row = messageRow(m);
  if (extra) row.push(...extra);
  return item("nba-inbox-item", row, () => [pre(m.text)], { id: m.id, kind: str(m.kind) }, ctx);
}

function answerRow(n) {
  const row = [badge("assistant", "assistant")];
  if (n.outcome) row.push(el("span", "nba-outcome", str(n.outcome)));
  return row;
}

function answerClass(n) {
  return "nba-answer" + (n.failed ? " nba-failed" : "") + (n.streaming ? " nba-streaming" : "");
}

/** An answer as text (as in the static HTML), e.g. while it streams: its text is one text node. */
export function plainAnswer(n, ctx) {
  const row = answerRow(n);
  row.push(el("span", "nba-answer-text", str(n.text) || str(n.first_line)));
  if (n.calls_text) row.push(el("span", "nba-muted", str(n.calls_text)));
  const detail = n.reasoning ? () => section("reasoning", n.reasoning) : null;
  return item(answerClass(n), row, detail, { id: n.id }, ctx);
}

/**
 * An answer rendered as Markdown by `ctx.markdown(source, host, node)` (a promise; how is the
 * host's choice: JupyterLab's sanitizer in the lab extension, a DOM built from Python's parse in the
 * widget), with its raw text one click away (the "Raw" button; `ctx.raw` keeps the choice per
 * answer across repaints). Reasoning stays collapsed.
 */
export function markdownAnswer(n, ctx) {
  const box = el("div", `nba-item ${answerClass(n)} nba-answer-md`, null, { id: n.id });
  const row = el("div", "nba-row");
  row.append(...answerRow(n));
  if (n.calls_text) row.append(el("span", "nba-muted", str(n.calls_text)));
  const toggle = el("button", "jp-Button jp-mod-minimal jp-mod-small nba-raw-toggle");
  toggle.type = "button";
  const rendered = el("div", "nba-answer-text nba-md jp-RenderedHTMLCommon");
  const source = pre(n.text);
  source.classList.add("nba-answer-raw");
  const show = (asRaw) => {
    rendered.hidden = asRaw;
    source.hidden = !asRaw;
    toggle.textContent = asRaw ? "Markdown" : "Raw";
    toggle.title = asRaw ? "Show the answer rendered as Markdown" : "Show the answer as the model wrote it";
    toggle.setAttribute("aria-pressed", String(asRaw));
    box.dataset.show = asRaw ? "raw" : "markdown";
  };
  toggle.addEventListener("click", () => {
    const asRaw = !ctx.raw.has(n.id);
    if (asRaw) ctx.raw.add(n.id);
    else ctx.raw.delete(n.id);
    show(asRaw);
  });
  show(ctx.raw.has(n.id));
  row.append(el("span", "nba-grow"), toggle);
  box.append(row, rendered, source);
  Promise.resolve()
    .then(() => ctx.markdown(str(n.text), rendered, n))
    .then(() => {
      box.dataset.rendered = "true";
    })
    .catch(() => {
      rendered.replaceChildren(pre(n.text)); // the renderer failed: the text as written
      box.dataset.rendered = "failed";
    });
  if (n.reasoning) {
    const reasoning = el("details", "nba-reasoning");
    reasoning.append(el("summary", "nba-source", "reasoning"), pre(n.reasoning));
    box.append(reasoning);
  }
  return box;
}

// The Markdown tree of an answer (nbagent/views/markdown_tree.py: `[tag, attrs, ...children]`,
// strings for text) built with DOM calls: no HTML is ever parsed. Only these elements are made;
// anything else is its text. A link keeps an absolute http(s)/mailto target and opens outside.
const MD_TAGS = new Set([
  "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "del", "code", "pre",
  "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a",
]);
const LINK_SCHEMES = new Set(["http:", "https:", "mailto:"]);
const ALIGN = new Set(["left", "center", "right"]);

function mdText(t) {
  if (typeof t === "string") return shown(t);
  return Array.isArray(t) ? t.slice(2).map(mdText).join("") : "";
}

function linkTarget(href) {
  if (typeof href !== "string") return null;
  try {
    return LINK_SCHEMES.has(new URL(href).protocol) ? href : null;
  } catch {
    return null; // relative or malformed: not a link here
  }
}

function mdNode(t) {
  if (!Array.isArray(t) || !MD_TAGS.has(t[0])) return document.createTextNode(mdText(t));
  const [tag, attrs, ...kids] = t;
  const e = document.createElement(tag);
  const a = attrs && typeof attrs === "object" ? attrs : {};
  if (tag === "a") {
    const href = linkTarget(a.href);
    if (href) {
      e.href = href;
      e.target = "_blank";
      e.rel = "noopener noreferrer nofollow";
    }
  } else if (tag === "ol" && Number.isInteger(a.start)) {
    e.start = a.start;
  } else if ((tag === "th" || tag === "td") && ALIGN.has(a.align)) {
    e.style.textAlign = a.align;
  }
  e.append(...kids.map(mdNode));
  return e;
}

/** The nodes of a Markdown tree (see above), for a host to put where it renders an answer. */
export function markdownNodes(tree) {
  return Array.isArray(tree) ? tree.map(mdNode) : [];
}

/** An answer: Markdown when the host renders it and the answer is whole, else its text. */
export function answerItem(n, ctx) {
  const whole = n.text && !n.streaming;
  const renders = ctx && ctx.markdown && (!ctx.renders || ctx.renders(n));
  return renders && whole ? markdownAnswer(n, ctx) : plainAnswer(n, ctx);
}

export function toolItem(n, ctx) {
  const running = n.result === null || n.result === undefined;
  const row = [
    badge("tool", "tool"),
    el("b", null, str(n.name)),
    el("span", "nba-tool-args", str(n.arguments_text)),
    el("span", "nba-outcome", n.is_error || running ? str(n.outcome) : "→"),
    el("span", "nba-line", str(n.result_line)),
  ];
  const detail = () => {
    const d = section("arguments", n.arguments);
    if (!running) d.push(...section(n.is_error ? "error" : "result", n.result));
    return d;
  };
  const cls = "nba-tool" + (n.is_error ? " nba-tool-error" : "");
  return item(cls, row, detail, { id: n.id, outcome: str(n.outcome) }, ctx);
}

export function mark(kind, text, data) {
  return el("div", "nba-mark", text, { mark: kind, ...(data || {}) });
}

/**
 * The element of one node that is not a turn or a step (`ctx`: `opened`, `raw`, `markdown`). A
 * node type this version has no case for shows its words as a mark, or nothing (null).
 */
export function leaf(n, ctx) {
  const own = ctx.leaves && Object.hasOwn(ctx.leaves, n.type) ? ctx.leaves[n.type] : null;
  if (own) return own(n, ctx); // a node type its host paints (a proposed cell's actions)
  switch (n.type) {
    case "message":
      return messageItem(n, ctx);
    case "assistant":
      return answerItem(n, ctx);
    case "tool":
      return toolItem(n, ctx);
    case "retry":
      return mark("retry", n.why ? `${str(n.text)} — ${n.why}` : str(n.text), { id: n.id });
    case "approval":
      return mark("approval", str(n.text), { outcome: str(n.outcome) || "asked", id: n.id });
    case "mark":
      return mark(str(n.mark), str(n.text), { id: n.id });
    default:
      return typeof n.text === "string" ? mark(str(n.type), n.text, { id: n.id }) : null;
  }
}

/** The head of a turn: number, prompt, outcome (failed turns say why), steps, time, status pill. */
export function turnHead(n) {
  const head = [el("span", "nba-caret"), el("b", null, `Turn ${n.turn}`), el("span", "nba-line", str(n.title))];
  if (n.why !== null && n.why !== undefined) head.push(el("span", "nba-outcome", str(n.outcome)));
  head.push(el("span", "nba-muted", str(n.steps_text)));
  if (n.duration_text) head.push(el("span", "nba-muted", str(n.duration_text)));
  head.push(pill(str(n.status), str(n.status_text)));
  return head;
}

/** The turn body's first child says why a turn did not complete (absent when it did). */
export function setWhy(body, n) {
  const old = body.querySelector(":scope > .nba-why");
  if (old) old.remove();
  if (!n.why) return;
  const why = el("div", "nba-why");
  why.append(el("b", null, "Why:"), document.createTextNode(` ${shown(n.why)}`));
  body.prepend(why);
}

/** The source kinds in the meter's order (KIND_ORDER of nbagent/views/meter.py; a test checks). */
export const KIND_ORDER = ["user", "cell", "dataframe", "variable", "error", "session-reference", "plugin",
  "notebook", "tool", "assistant", "system", "tools"];
const LEGEND_WORDS = { user: "followup · steer" };

/** A source kind's colour: its badge's CSS variable (typed prompts: the followup colour). */
export function kindColour(kind) {
  const name = kind === "user" ? "followup" : kind;
  return /^[a-z-]+$/.test(name) ? `var(--nba-${name}, var(--nba-neutral))` : "var(--nba-neutral)";
}

/** The kinds the steps' bars of `nodes` hold, in the meter's order (others by name). */
export function legendKinds(nodes) {
  const kinds = new Set();
  for (const n of nodes) if (n.type === "step" && Array.isArray(n.bar)) for (const p of n.bar) kinds.add(String(p.kind));
  const rest = [...kinds].filter((k) => !KIND_ORDER.includes(k)).sort();
  return [...KIND_ORDER.filter((k) => kinds.has(k)), ...rest];
}

/** The bars' colour key, once per timeline (as the static HTML's): null while no step has a bar. */
export function meterLegend(nodes) {
  const kinds = legendKinds(nodes);
  if (!kinds.length) return null;
  const legend = el("div", "nba-meter-legend");
  legend.append(el("span", "nba-muted", "tokens in, by source:"));
  for (const k of kinds) {
    const item = el("span", "nba-legend-item", null, { part: k });
    const swatch = el("span", "nba-swatch");
    swatch.style.background = kindColour(k);
    item.append(swatch, document.createTextNode(shown(LEGEND_WORDS[k] || k)));
    legend.append(item);
  }
  return legend;
}

/**
 * The context meter (SPEC §12): a step's stacked bar by source kind, coloured like the badges
 * (their CSS variables, so dark themes follow), numbers in the tooltips and the total in words.
 */
export function stepMeter(n) {
  if (!n.bar || !n.bar.length) return null;
  const meter = el("span", "nba-meter");
  meter.title = n.bar.map((p) => p.text).join(" · ");
  const bar = el("span", "nba-meter-bar");
  for (const p of n.bar) {
    const part = el("span", null, null, { part: p.kind });
    part.title = p.text;
    part.style.flexGrow = String(p.share);
    part.style.background = kindColour(p.kind);
    bar.append(part);
  }
  meter.append(bar, el("span", "nba-muted", str(n.tokens_text)));
  return meter;
}

/** A step's head: its label, then its meter (repainted in place when an estimate arrives). */
export function paintStepHead(head, n) {
  head.replaceChildren(document.createTextNode(str(n.label)));
  const meter = stepMeter(n);
  if (meter) head.append(" ", meter);
}

/** A step's box; its children go into the box itself. */
export function stepBox(n) {
  const box = el("div", "nba-step", null, { id: n.id });
  const head = el("div", "nba-step-head");
  paintStepHead(head, n);
  box.append(head);
  return box;
}

/** A turn's `<details>`: its head, and an empty body its children go into. */
export function turnBox(n) {
  const box = el("details", "nba-turn", null, { id: n.id, status: str(n.status) });
  const head = el("summary", "nba-turn-head");
  head.append(...turnHead(n));
  const body = el("div", "nba-turn-body");
  setWhy(body, n);
  box.append(head, body);
  return { box, body };
}

/** Repaint a turn's head and reason in place (its body and whether it is open are kept). */
export function repaintTurn(box, body, n) {
  box.dataset.status = str(n.status);
  box.querySelector(":scope > summary").replaceChildren(...turnHead(n));
  if (body) setWhy(body, n);
}

/** A pane's head: a title, muted words, and a status pill. */
export function paneHead(title, muted, status, statusText) {
  const head = el("div", "nba-head");
  head.append(el("span", "nba-title", title), el("span", "nba-muted", muted), el("span", "nba-grow"), pill(status, statusText));
  return head;
}

/** One pending queue: its name (with a hint), its items, or "empty". */
export function queueBox(name, hint, items, paintItem) {
  const box = el("div", items.length ? "nba-queue" : "nba-queue nba-queue-empty", null, { queue: name });
  const title = el("div", "nba-queue-name", name);
  if (hint) title.title = hint;
  box.append(title);
  if (!items.length) box.append(el("span", "nba-muted", "empty"));
  for (const m of items) box.append(paintItem(m));
  return box;
}

// -- the turn diff (nbagent/views/diff.py, diff_json): two requests per step, side by side --------

const SAME_RUN = 3; // this many "same" rows in a row or more fold into one line that opens to them
const EAGER_STEPS = 4; // steps whose rows are built at once; later ones when they scroll into view
const ROW_PX = 20; // a row's height, for the room a step not built yet keeps

function diffRow(m) {
  const row = el("div", "nba-diff-msg", null, { mark: m.mark, id: m.id, kind: m.kind });
  const symbol = el("span", "nba-diff-mark", m.symbol);
  symbol.title = shown(m.mark_text);
  symbol.setAttribute("aria-label", shown(m.mark_text));
  row.append(symbol, badge(str(m.kind), str(m.badge), m.role === "user" ? "" : str(m.role)));
  if (m.label) row.append(el("span", "nba-label", str(m.label)));
  const line = el("span", "nba-line", str(m.first_line));
  line.title = str(m.first_line);
  row.append(line);
  if (m.mark !== "same") row.append(el("span", "nba-diff-where", str(m.mark_text)));
  row.append(el("span", "nba-size", str(m.tokens_text)));
  return row;
}

function diffRows(rows) {
  const out = [];
  for (let i = 0; i < rows.length; ) {
    let j = i;
    while (j < rows.length && rows[j].mark === "same") j++;
    if (j - i >= SAME_RUN) {
      const run = rows.slice(i, j);
      const fold = el("details", "nba-diff-same", null, { count: run.length });
      fold.append(el("summary", "nba-muted", `${run.length} messages the same on both sides`));
      fold.addEventListener("toggle", () => {
        if (fold.open && fold.childElementCount === 1) fold.append(...run.map(diffRow));
      });
      out.push(fold);
      i = j;
    } else {
      for (; i < Math.max(j, i + 1) && i < rows.length; i++) out.push(diffRow(rows[i]));
    }
  }
  return out;
}

// A side's carried messages (the history its previous step's request already held) fold into one
// line ("7 messages carried from step 1 · 2 differ") that opens on a click; the rest are the change.
function diffSide(side) {
  const box = el("div", "nba-diff-side", null, { side: side.side, missing: side.missing ? "true" : undefined });
  if (side.missing) {
    box.append(el("div", "nba-muted nba-diff-none", `no step here in ${side.side}`));
    return box;
  }
  const carried = side.rows.filter((m) => m.carried);
  if (carried.length) {
    const fold = el("details", "nba-diff-carried", null, { count: carried.length });
    fold.append(el("summary", "nba-muted", str(side.carried_text) || `${carried.length} messages carried`));
    fold.addEventListener("toggle", () => {
      if (fold.open && fold.childElementCount === 1) fold.append(...carried.map(diffRow));
    });
    box.append(fold);
  }
  box.append(...diffRows(side.rows.filter((m) => !m.carried)));
  const answer = el("div", "nba-diff-answer" + (side.failed ? " nba-failed" : ""));
  answer.append(badge("assistant", "assistant"), el("span", "nba-line", str(side.answer_text)));
  box.append(answer);
  return box;
}

/** A changed answer word by word (`[[op, text]]`, op "=", "+" or "-"): b's words marked against a's. */
export function answerWords(ops) {
  const box = el("div", "nba-diff-words");
  box.setAttribute("aria-label", "the answer, word by word: inserted and deleted words marked");
  for (const [op, text] of ops || []) {
    box.append(op === "+" ? el("ins", null, text) : op === "-" ? el("del", null, text) : document.createTextNode(str(text)));
  }
  return box;
}

function fillStep(box, s) {
  if (box.dataset.built === "true") return;
  const sides = el("div", "nba-diff-sides");
  sides.append(...s.sides.map(diffSide));
  box.append(sides);
  box.style.minHeight = "";
  box.dataset.built = "true";
}

/**
 * One step of a diff: its head (answer changed or not, marks), then side a and side b. With
 * `later`, the sides are built only when `later(box, fill)` calls `fill` (when it scrolls into view).
 */
export function diffStep(s, later) {
  const box = el("div", "nba-diff-step", null, { step: s.step, changed: String(!!s.changed) });
  const head = el("div", "nba-diff-step-head");
  head.append(el("b", null, `Step ${s.step}`), pill(s.changed ? "changed" : "same", str(s.changed_text)));
  if (s.marks_text) head.append(el("span", "nba-muted", str(s.marks_text)));
  box.append(head);
  if (s.answer_diff && s.answer_diff.length) box.append(answerWords(s.answer_diff));
  if (!later) {
    fillStep(box, s);
    return box;
  }
  box.dataset.built = "false";
  const rows = Math.max(...s.sides.map((side) => side.rows.filter((m) => !m.carried).length + 2));
  box.style.minHeight = `${Math.min(rows, 40) * ROW_PX}px`;
  later(box, () => fillStep(box, s));
  return box;
}

/**
 * The whole diff view model (`application/vnd.nbagent.diff+json`) as an element; `options.eager`
 * builds every step at once (else steps after the first few are built as they scroll into view).
 */
export function diffView(d, options) {
  const root = el("div", "nbagent nba-diff");
  const head = el("div", "nba-head");
  head.append(el("span", "nba-title", "Diff"), el("span", "nba-muted", str(d.summary)), el("span", "nba-grow"));
  const legend = el("div", "nba-diff-legend");
  for (const [symbol, word] of d.legend || []) {
    const key = el("span", "nba-diff-key", null, { mark: word });
    key.append(el("span", "nba-diff-mark", symbol), document.createTextNode(` ${word}`));
    legend.append(key);
  }
  const columns = el("div", "nba-diff-sides nba-diff-columns");
  columns.append(el("div", "nba-title", str(d.a && d.a.title)), el("div", "nba-title", str(d.b && d.b.title)));
  const body = el("div", "nba-scroll");
  // A long diff builds its first steps now and the others as they scroll into view.
  const waiting = new Map();
  const seen = typeof IntersectionObserver === "function"
    ? new IntersectionObserver((entries) => {
        for (const entry of entries) {
          if (!entry.isIntersecting) continue;
          seen.unobserve(entry.target);
          waiting.get(entry.target)?.();
          waiting.delete(entry.target);
        }
      }, { rootMargin: "400px" })
    : null;
  const later = seen && !(options && options.eager)
    ? (box, fill) => {
        waiting.set(box, fill);
        seen.observe(box);
      }
    : null;
  if (d.identical) body.append(el("div", "nba-diff-identical", str(d.identical_text)));
  else body.append(...(d.steps || []).map((s, i) => diffStep(s, i < EAGER_STEPS ? null : later)));
  root.append(head, legend, columns, body);
  markPainted(root);
  return root;
}
