// Pieces shared by the views: event rows, countdown cells, item rows.

import { clock } from "../api.js";
import { badge, fmtAgo, fmtCountdown, fmtDuration, fmtTime, h, itemLink, keyLink, timeEl } from "../dom.js";

// A reason given by an authority (force-release, takeover, reassign) stands out; others do not.
const FORCED = new Set(["force_released", "taken_over", "reassigned"]);
function reasonClass(e) {
  return FORCED.has(e.type) ? "reason reason-forced" : "reason";
}

// One field of an event's data, readably: durations and instants formatted, the rest as JSON.
function dataField(k, v) {
  if (typeof v === "number" && k.endsWith("_ms")) return `${k.slice(0, -3).replace(/_/g, " ")} ${fmtDuration(v)}`;
  if (typeof v === "number" && k === "stall_after") return `stall after ${fmtDuration(v)}`;
  if (typeof v === "number" && (k === "deadline" || k.endsWith("_at") || k === "until" || k === "since")) return `${k.replace(/_/g, " ")} ${fmtTime(v)}`;
  return `${k.replace(/_/g, " ")} ${typeof v === "string" ? v : JSON.stringify(v)}`;
}

// A file changed by a session while another held it: who changed it, whose lease it was.
function unleasedText(e) {
  const d = e.data || {};
  const holder = d.holder_session ? `${e.holder} (session ${d.holder_session})` : e.holder;
  const held = d.held_key && d.held_key !== e.key ? ` under ${d.held_key}` : "";
  return `changed by ${e.actor ?? "?"}${d.session ? ` (session ${d.session})` : ""} while ${holder} held it${held}`;
}

// At most `max` characters, cut at a word boundary (never mid-word), with an ellipsis.
function cutAtWord(text, max) {
  if (text.length <= max) return text;
  const cut = text.lastIndexOf(" ", max);
  return `${text.slice(0, cut > max / 2 ? cut : max)}…`;
}

export function eventDetails(e) {
  const parts = [];
  if (e.type === "unleased_edit") {
    return [h("span", { class: "reason reason-forced unleased" }, unleasedText(e)),
      e.data?.changed_at ? h("span", { class: "muted data" }, `changed at ${fmtTime(e.data.changed_at)}`) : null];
  }
  if (e.reason) parts.push(h("span", { class: reasonClass(e) }, `reason: ${e.reason}`));
  const data = { ...(e.data || {}) };
  if (e.type === "progress") {
    const pct = data.percent !== undefined ? `${data.percent}% ` : "";
    if (data.message || pct) parts.push(h("span", {}, `${pct}${data.message ?? ""}`));
    delete data.message;
    delete data.percent;
  }
  if (e.key === `items/${data.item}`) delete data.item;
  const rest = Object.entries(data)
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => dataField(k, v))
    .join(" · ");
  if (rest) parts.push(h("span", { class: "muted data", title: rest.length > 160 ? rest : null }, cutAtWord(rest, 160)));
  return parts;
}

// How many characters of a key fit its cell: fewer on a phone.
export const keyRoom = () => (window.matchMedia("(max-width: 600px)").matches ? 30 : 44);

export function eventRow(e) {
  return h(
    "tr",
    { dataset: { id: String(e.id), type: e.type }, class: "event-row" },
    h("td", { class: "nowrap mono muted", title: new Date(e.at).toISOString() }, fmtTime(e.at)),
    h("td", {}, badge(e.type)),
    h("td", { class: "mono key-cell" }, e.key ? keyLink(e.key, keyRoom()) : "—"),
    h("td", {}, e.holder ?? "—"),
    h("td", { class: "muted col-2" }, e.task ?? ""),
    h("td", { class: "mono num col-2" }, e.token ?? ""),
    h("td", { class: "col-2" }, e.actor ?? ""),
    h("td", { class: "details" }, eventDetails(e)),
  );
}

export function eventTable(rows) {
  return h(
    "table",
    { class: "table events-table" },
    h("thead", {}, h("tr", {}, ["Time", "Type", "Key", "Holder", "Task", "Token", "Actor", "Details"].map((t) => h("th", { class: ["Task", "Token", "Actor"].includes(t) ? "col-2" : "" }, t)))),
    h("tbody", {}, rows),
  );
}

export function eventLine(e) {
  return h(
    "li",
    { class: "event-line", dataset: { id: String(e.id), type: e.type } },
    h("span", { class: "mono muted nowrap" }, fmtTime(e.at)),
    badge(e.type),
    h("span", { class: "event-line-key" }, e.key ? keyLink(e.key, 36) : ""),
    h("span", { class: "muted event-line-who" }, e.actor && e.actor !== e.holder ? `${e.holder ?? ""} · by ${e.actor}` : e.holder ?? ""),
    e.reason ? h("span", { class: reasonClass(e) }, e.reason) : null,
    e.type === "unleased_edit" ? h("span", { class: "reason reason-forced" }, unleasedText(e)) : null,
  );
}

// A lease's holder, and its session when it is not the default one ("").
export function holderOf(lease) {
  return [
    h("span", { class: "holder" }, lease.holder),
    lease.session ? h("span", { class: "session muted mono", title: "session" }, lease.session) : null,
  ];
}

// The same as one line of text (for dialogs): "jo (session web-2)".
export function holderText(lease) {
  return lease.session ? `${lease.holder} (session ${lease.session})` : lease.holder;
}

// A countdown cell: text and a bar of the term left. Update with tickCountdowns(root).
export function countdown(lease) {
  const total = Math.max(lease.ttl_ms, lease.expires_at - lease.renewed_at, 1);
  const el = h(
    "span",
    { class: "countdown", dataset: { expires: String(lease.expires_at), total: String(total) } },
    h("span", { class: "cd-text" }),
    h("span", { class: "cd-bar" }, h("span", { class: "cd-fill" })),
  );
  tickOne(el, clock.now());
  return el;
}

function tickOne(el, now) {
  // Never more than the lease's whole span: the estimate of the server's clock can lag it by
  // a few milliseconds (half a request), and a lease just granted would read "31s" of a 30 s ttl.
  const left = Math.min(Number(el.dataset.expires) - now, Number(el.dataset.total));
  const frac = Math.max(0, Math.min(1, left / Number(el.dataset.total)));
  el.firstChild.textContent = fmtCountdown(left);
  el.lastChild.firstChild.style.width = `${(frac * 100).toFixed(1)}%`;
  el.classList.toggle("cd-low", left > 0 && frac < 0.25);
  el.classList.toggle("cd-expired", left <= 0);
}

export function tickCountdowns(root) {
  const now = clock.now();
  for (const el of root.querySelectorAll(".countdown")) tickOne(el, now);
}

export function stateBadge(state) {
  return badge(state, `state-${state}`);
}

// A claim's state in words, as the server decided it (view.state: word, at, by, reason, to,
// since): "live, expires in 4m", "lapsed 2m ago", "reassigned 5s ago to bob by sue: rota".
// Only the time is worded here, in its tense: the word and the moment are the server's.
export function stateText(state) {
  if (!state) return "";
  const ahead = state.word === "live" || state.word === "stalled";
  const parts = [state.word];
  if (state.word === "stalled" && state.since != null) parts[0] = `stalled: no progress for ${fmtCountdown(clock.now() - state.since)}`;
  if (state.at != null) parts.push(ahead ? `expires ${fmtAgo(state.at)}` : fmtAgo(state.at));
  if (state.to) parts.push(`to ${state.to}`);
  if (state.by) parts.push(`by ${state.by}`);
  const said = ahead ? parts.join(", ") : parts.join(" ");
  return state.reason ? `${said}: ${state.reason}` : said;
}

export function priorityBadge(p) {
  return h("span", { class: `prio prio-${Math.min(p, 4)}`, title: `priority ${p}` }, `P${p}`);
}

// One item in a list: title (linked), id, priority, labels, assignee, state and progress.
export function itemRow(item, { state = null, extra = null } = {}) {
  const pct = item.progress?.percent;
  return h(
    "li",
    { class: "item-row", dataset: { item: item.id } },
    h(
      "div",
      { class: "item-row-main" },
      priorityBadge(item.priority),
      h("a", { href: `#/items/${encodeURIComponent(item.id)}`, class: "item-title" }, item.title),
      state ? stateBadge(state.word ?? state) : null,
    ),
    h(
      "div",
      { class: "item-row-meta muted" },
      itemLink(item.id),
      item.assignee ? h("span", {}, `→ ${item.assignee}`) : null,
      item.labels.map((l) => h("span", { class: "label" }, l)),
      pct !== undefined ? h("span", { class: "mini-progress", title: `${pct}%` }, h("span", { class: "mini-progress-fill", dataset: { pct: String(pct) } })) : null,
      item.progress?.message ? h("span", { class: "item-progress-msg" }, item.progress.message) : null,
      state?.word ? h("span", { class: "item-state-text" }, stateText(state)) : null,
      extra,
      timeEl(item.updated_at),
    ),
  );
}

// Width of the mini progress bars (CSSOM: allowed by the page's CSP).
export function sizeBars(root) {
  for (const el of root.querySelectorAll("[data-pct]")) el.style.width = `${el.dataset.pct}%`;
}
