// The review page of `neardup serve`: a queue of pairs, each side by side, labelled with the
// keyboard; labels are stored by the server (PUT /v1/labels) and summed up in the summary.
// No framework and no CDN: the server compiles this file in.
"use strict";

const state = {
  token: sessionStorage.getItem("neardup-token") || "",
  pairs: [],
  index: -1,
  page: 0,
  pages: 1,
  undo: [],
  prefilled: false,
};

const $ = (id) => document.getElementById(id);

function status(text) {
  $("status").textContent = text;
}

class Unauthorized extends Error {}

async function api(method, path, body) {
  const headers = {};
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) throw new Unauthorized("the token was refused");
  const type = response.headers.get("Content-Type") || "";
  const data = type.includes("application/json") ? await response.json() : await response.text();
  if (!response.ok) {
    throw new Error((data && data.error) || response.status + " " + response.statusText);
  }
  return data;
}

function showLogin(message) {
  $("app").hidden = true;
  $("login").hidden = false;
  status(message);
  $("token").focus();
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

const VERDICT_TEXT = { duplicate: "duplicate", not_duplicate: "not a duplicate", unsure: "unsure" };

function pairName(p) {
  return p.a + " ↔ " + p.b;
}

function renderQueue() {
  const list = $("queue");
  list.replaceChildren();
  state.pairs.forEach((p, i) => {
    const verdict = p.label ? p.label.verdict : null;
    const button = el(
      "button",
      { type: "button", "data-index": String(i), "aria-current": String(i === state.index) },
      el("span", { class: "tag" }, p.stratum),
      " J " + p.jaccard.toFixed(3) + " · " + p.distance + " bits ",
      el("span", { class: verdict ? "v-" + verdict : "" }, verdict ? "✓ " + VERDICT_TEXT[verdict] : "not labelled"),
    );
    button.setAttribute("aria-label", `${i + 1}: ${p.stratum}, Jaccard ${p.jaccard.toFixed(3)}, ${p.distance} bits, ${verdict ? VERDICT_TEXT[verdict] : "not labelled"}`);
    button.addEventListener("click", () => select(i));
    list.append(el("li", {}, button));
  });
  const done = state.pairs.filter((p) => p.label).length;
  $("queue-info").textContent = `${done} of ${state.pairs.length} labelled`;
}

async function loadQueue(refresh) {
  const q = await api("GET", "/v1/review/queue" + (refresh ? "?refresh=true" : ""));
  state.pairs = q.pairs;
  // Without --token-file the server cannot tell reviewers apart: the page asks for a name.
  state.askName = !q.reviewer_from_token;
  $("reviewer-form").hidden = !state.askName;
  $("reviewer").value = localStorage.getItem("neardup-reviewer") || "";
  $("reviewer-line").textContent = state.askName ? "" : `Labelling as ${q.reviewer}.`;
  if (!q.texts) status("The server was started without --review-input: texts cannot be shown, only scores.");
  renderQueue();
  return q;
}

function segmentNode(s) {
  if (s.kind === "removed") return el("del", { class: "seg-removed" }, s.text);
  if (s.kind === "added") return el("ins", { class: "seg-added" }, s.text);
  if (s.kind === "moved") return el("span", { class: "seg-moved" }, s.text);
  return document.createTextNode(s.text);
}

function cell(segments, row, side) {
  const td = el("td", {});
  if (!segments) {
    td.append(el("span", { class: "sr-only" }, side === "left" ? "nothing on the left" : "nothing on the right"));
    return td;
  }
  if (row.kind === "moved") {
    td.append(el("span", { class: "moved-note" }, row.moved_to != null ? `moved (other copy in row ${row.moved_to + 1})` : "moved"));
  }
  segments.forEach((s, i) => {
    if (i > 0 && s.kind === "same") td.append(" ");
    else if (i > 0) td.append(" ");
    td.append(segmentNode(s));
  });
  return td;
}

function renderFacts(pair) {
  const facts = $("facts");
  facts.replaceChildren();
  const row = (name, left, right) => {
    facts.append(el("dt", {}, name), el("dd", {}, left == null ? "—" : String(left)), el("dd", {}, right == null ? "—" : String(right)));
  };
  row("record", pair.left.id, pair.right.id);
  row("url", pair.left.url, pair.right.url);
  row("first seen", pair.left.first_seen, pair.right.first_seen);
  row("text", pair.left.text ? "shown" : "not in --review-input", pair.right.text ? "shown" : "not in --review-input");
  facts.append(el("dt", {}, "scores"), el("dd", {}, `distance ${pair.distance} bits, Jaccard ${pair.jaccard.toFixed(4)}`), el("dd", {}, `${pair.rule} (${pair.stratum})`));
  $("left-head").textContent = "Left: " + pair.left.id;
  $("right-head").textContent = "Right: " + pair.right.id;
}

function renderLabel(label) {
  for (const b of document.querySelectorAll("#verdict-bar [data-verdict]")) {
    b.setAttribute("aria-pressed", String(!!label && label.verdict === b.dataset.verdict));
  }
  $("current-label").textContent = label ? `labelled ${VERDICT_TEXT[label.verdict]} by ${label.by}` : "not labelled";
}

async function showPair() {
  const p = state.pairs[state.index];
  if (!p) return;
  const pair = await api("GET", `/v1/review/pair?a=${encodeURIComponent(p.a)}&b=${encodeURIComponent(p.b)}&page=${state.page}`);
  renderFacts(pair);
  renderLabel(pair.label);
  const body = $("diff-body");
  body.replaceChildren();
  if (!pair.diff) {
    body.append(el("tr", {}, el("td", { colspan: "2", class: "missing" }, "The texts of this pair were not found in --review-input.")));
    state.pages = 1;
  } else {
    const page = pair.diff.page;
    state.pages = Math.max(page.pages, 1);
    const first = page.page * 200;
    page.rows.forEach((r, i) => {
      const tr = el("tr", { class: "row-" + r.kind, id: "row-" + (first + i + 1) });
      tr.append(cell(r.left, r, "left"), cell(r.right, r, "right"));
      body.append(tr);
    });
    const shared = Math.round((100 * pair.diff.same_words_left) / Math.max(pair.diff.left_words, 1));
    $("diff-caption").textContent = `Both texts, paragraph by paragraph (${pair.diff.left_words} and ${pair.diff.right_words} words; ${shared}% of the left's words unchanged${pair.diff.coarse ? "; coarse diff, the texts are long" : ""}): removed words struck through on the left, added words underlined on the right, moved paragraphs marked.`;
  }
  $("page-info").textContent = `page ${state.page + 1} of ${state.pages}`;
  $("prev-page").disabled = state.page === 0;
  $("next-page").disabled = state.page + 1 >= state.pages;
  status(`Pair ${state.index + 1} of ${state.pairs.length}: ${pairName(p)}`);
}

async function select(i) {
  if (i < 0 || i >= state.pairs.length) return;
  state.index = i;
  state.page = 0;
  renderQueue();
  await showPair();
}

async function turnPage(delta) {
  const next = state.page + delta;
  if (next < 0 || next >= state.pages) return;
  state.page = next;
  await showPair();
}

function nextUnlabelled(from) {
  for (let i = from + 1; i < state.pairs.length; i++) if (!state.pairs[i].label) return i;
  for (let i = 0; i <= from && i < state.pairs.length; i++) if (!state.pairs[i].label) return i;
  return Math.min(from + 1, state.pairs.length - 1);
}

function withName(body) {
  const name = $("reviewer").value.trim();
  if (state.askName && name) {
    localStorage.setItem("neardup-reviewer", name);
    body.by = name;
  }
  return body;
}

async function label(verdict) {
  const i = state.index;
  const p = state.pairs[i];
  if (!p) return;
  const saved = await api("PUT", "/v1/labels", withName({ a: p.a, b: p.b, verdict }));
  state.undo.push({ a: p.a, b: p.b, previous: p.label });
  p.label = saved;
  status(`Labelled ${pairName(p)} ${VERDICT_TEXT[verdict]}.`);
  await select(nextUnlabelled(i));
  await loadSummary();
}

async function undo() {
  const last = state.undo.pop();
  if (!last) {
    status("Nothing to undo.");
    return;
  }
  // By the pair, not its place: the queue may have been drawn again since.
  const index = state.pairs.findIndex((q) => q.a === last.a && q.b === last.b);
  const p = index >= 0 ? state.pairs[index] : { a: last.a, b: last.b, label: null };
  if (last.previous) {
    p.label = await api("PUT", "/v1/labels", withName({ a: p.a, b: p.b, verdict: last.previous.verdict }));
  } else {
    await api("DELETE", `/v1/labels?a=${encodeURIComponent(p.a)}&b=${encodeURIComponent(p.b)}`);
    p.label = null;
  }
  if (index >= 0) await select(index);
  renderQueue();
  status(`Undone: ${pairName(p)} is ${p.label ? VERDICT_TEXT[p.label.verdict] : "not labelled"} again.`);
  await loadSummary();
}

function fmt(x) {
  return (100 * x).toFixed(1) + "%";
}

async function loadSummary() {
  const s = await api("GET", "/v1/review/summary");
  const strata = Object.keys(s.counts).sort();
  const verdicts = ["duplicate", "not_duplicate", "unsure"];
  const table = el("table", {}, el("caption", {}, `${s.labels} labels`));
  table.append(el("tr", {}, el("th", { scope: "col" }, "stratum"), ...verdicts.map((v) => el("th", { scope: "col" }, VERDICT_TEXT[v]))));
  for (const st of strata) {
    table.append(el("tr", {}, el("th", { scope: "row" }, st), ...verdicts.map((v) => el("td", {}, String(s.counts[st][v] || 0)))));
  }
  $("counts").replaceChildren(table);
  if (s.precision) {
    const p = s.precision;
    $("precision").textContent = `Precision of the merges: ${fmt(p.value)} (95% interval ${fmt(p.low)}–${fmt(p.high)}, ${p.labels} labels${s.boundary_only ? ", boundary merges only" : ", strata weighted by size"}).`;
  } else {
    const b = s.precision_by_stratum.boundary;
    $("precision").textContent = b
      ? `Precision near the threshold: ${fmt(b.value)} (95% interval ${fmt(b.low)}–${fmt(b.high)}, ${b.labels} labels). Label random merges too for all merges.`
      : "Label merges to estimate precision.";
  }
  if (s.recommended) {
    const r = s.recommended;
    $("recommendation").textContent = `In use: max distance ${s.current.max_distance}, min Jaccard ${s.current.min_jaccard}. Recommended: max distance ${r.max_distance}, min Jaccard ${r.min_jaccard.toFixed(2)} (precision ${fmt(r.precision)}, recall ${fmt(r.recall)}${r.meets_min_precision ? "" : `; no threshold reaches precision ${fmt(r.min_precision)}, best F1 shown`}).`;
    if (!state.prefilled) {
      $("dry-k").value = r.max_distance;
      $("dry-j").value = r.min_jaccard.toFixed(2);
      state.prefilled = true;
    }
  } else {
    $("recommendation").textContent = s.note || "";
    if (!state.prefilled) {
      $("dry-k").value = s.current.max_distance;
      $("dry-j").value = s.current.min_jaccard;
    }
  }
  if (s.plot_svg) {
    $("plot").src = "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(s.plot_svg)));
    $("plot").alt = s.recommended
      ? `Precision, recall and F1 by radius and by Jaccard threshold from ${s.labels} labels; recommended max distance ${s.recommended.max_distance}, min Jaccard ${s.recommended.min_jaccard.toFixed(2)}.`
      : "Precision and recall plot";
    $("plot-figure").hidden = false;
  } else {
    $("plot-figure").hidden = true;
  }
}

function changesTable(r) {
  const what = r.applied == null ? "would" : "did";
  const table = el("table", {}, el("caption", {}, `${r.splits} merges ${what} split, ${r.merges} rejected candidates ${what} merge (${r.not_applicable} not automatically).`));
  table.append(el("tr", {}, ...["change", "record", "other", "bits", "Jaccard"].map((h) => el("th", { scope: "col" }, h))));
  for (const c of r.changes.slice(0, 50)) {
    table.append(el("tr", {}, el("td", {}, c.change), el("td", {}, c.record), el("td", {}, c.other), el("td", {}, String(c.distance)), el("td", {}, c.jaccard.toFixed(3))));
  }
  return table;
}

function thresholds() {
  return { max_distance: Number($("dry-k").value), min_jaccard: Number($("dry-j").value) };
}

async function dryRun(event) {
  event.preventDefault();
  const out = $("dry-result");
  out.textContent = "Running…";
  try {
    const body = thresholds();
    const r = await api("POST", "/v1/review/reevaluate", body);
    const parts = [changesTable(r)];
    if (r.splits + r.merges > 0) {
      const apply = el("button", { type: "button", id: "apply" }, `Apply at max distance ${body.max_distance}, min Jaccard ${body.min_jaccard}`);
      apply.addEventListener("click", () => applyChanges(body).catch(fail));
      parts.push(apply);
    }
    out.replaceChildren(...parts);
  } catch (e) {
    out.textContent = "The dry run failed: " + e.message;
  }
}

async function applyChanges(body) {
  if (!window.confirm(`Apply reevaluate at max distance ${body.max_distance} and min Jaccard ${body.min_jaccard} to the store? Merges that fail are split.`)) return;
  const r = await api("POST", "/v1/review/reevaluate", { ...body, apply: true });
  $("dry-result").replaceChildren(changesTable(r), el("p", {}, `Applied ${r.applied} changes. The server keeps deciding with the thresholds it was started with: restart it with --max-distance ${body.max_distance} --min-jaccard ${body.min_jaccard} to keep them.`));
  await loadQueue(true);
  await loadSummary();
  status(`Applied ${r.applied} changes.`);
}

async function exportLabels(event) {
  event.preventDefault();
  const text = await api("GET", "/v1/labels?format=pairs");
  const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
  const a = el("a", { href: url, download: "labels.jsonl" });
  document.body.append(a);
  a.click();
  a.remove();
  URL.revokeObjectURL(url);
  status("Exported the labels as labels.jsonl.");
}

function onKey(event) {
  const t = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "Escape" && $("plot-figure").classList.contains("large")) {
    $("plot-size").click();
    return;
  }
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
  const actions = {
    d: () => label("duplicate"),
    n: () => label("not_duplicate"),
    u: () => label("unsure"),
    z: () => undo(),
    j: () => select(state.index + 1),
    k: () => select(state.index - 1),
    "]": () => turnPage(1),
    "[": () => turnPage(-1),
  };
  const act = actions[event.key];
  if (!act) return;
  event.preventDefault();
  act().catch(fail);
}

function fail(e) {
  if (e instanceof Unauthorized) showLogin("The token was refused: enter it again.");
  else status("Error: " + e.message);
}

async function start() {
  try {
    await loadQueue(false);
  } catch (e) {
    if (e instanceof Unauthorized) {
      showLogin(state.token ? "The token was refused: enter it again." : "This server needs a token.");
      return;
    }
    throw e;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  await loadSummary();
  if (state.pairs.length === 0) {
    status("No pairs to review: the store has no merges or rejected candidates near the threshold.");
    return;
  }
  await select(nextUnlabelled(-1));
  $("pair").focus({ preventScroll: true });
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    sessionStorage.setItem("neardup-token", state.token);
    start().catch(fail);
  });
  for (const b of document.querySelectorAll("#verdict-bar [data-verdict]")) {
    b.addEventListener("click", () => label(b.dataset.verdict).catch(fail));
  }
  $("undo").addEventListener("click", () => undo().catch(fail));
  $("prev-page").addEventListener("click", () => turnPage(-1).catch(fail));
  $("next-page").addEventListener("click", () => turnPage(1).catch(fail));
  $("dry-run").addEventListener("submit", (e) => dryRun(e).catch(fail));
  $("export").addEventListener("click", (e) => exportLabels(e).catch(fail));
  $("plot-size").addEventListener("click", () => {
    const large = $("plot-figure").classList.toggle("large");
    $("plot-size").setAttribute("aria-pressed", String(large));
    $("plot-size").textContent = large ? "Shrink the plot" : "Enlarge the plot";
  });
  document.addEventListener("keydown", onKey);
  start().catch(fail);
});
