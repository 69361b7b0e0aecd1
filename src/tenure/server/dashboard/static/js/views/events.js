// The event feed, live over SSE. Without filters it shows the app-wide feed; with filters it
// backfills the newest matching events and follows its own filtered stream.

import { card, clear, h, problemBox } from "../dom.js";
import { feed, onFeedEvent, onFeedState } from "../feed.js";
import { EventStream, recentEvents } from "../sse.js";
import { eventRow, eventTable } from "./common.js";

const TYPES = [
  "acquired", "renewed", "extended", "released", "expired", "force_released", "conflict", "taken_over",
  "claimed", "progress", "completed", "cancelled", "dispatched", "reassigned", "stalled",
  "item_created", "item_edited", "item_status", "principal_created", "token_issued", "token_revoked",
  "unleased_edit",
];
const MAX_ROWS = 500;

export function events(el, _arg, query) {
  const filters = { type: query.get("type") ?? "", key: query.get("key") ?? "", holder: query.get("holder") ?? "" };
  let paused = false;
  let stream = null;
  let controller = null;
  let alive = true;
  const tbody = h("tbody", { id: "events-body" });
  const table = eventTable([]);
  table.replaceChild(tbody, table.querySelector("tbody"));
  const status = h("span", { class: "muted", id: "events-status" });
  const message = h("div");
  const typeSelect = h("select", { class: "input input-narrow", name: "type", onchange: (e) => setFilter("type", e.target.value) },
    h("option", { value: "" }, "All types"),
    TYPES.map((t) => h("option", { value: t }, t)));
  typeSelect.value = filters.type;
  let debounce = null;
  const input = (name, placeholder) => h("input", { type: "search", name, placeholder, value: filters[name], class: "input", spellcheck: "false", oninput: (e) => {
    clearTimeout(debounce);
    debounce = setTimeout(() => setFilter(name, e.target.value.trim()), 300);
  } });
  const pause = h("button", { type: "button", class: "btn", onclick: () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.classList.toggle("active", paused);
  } }, "Pause");

  el.append(
    h("div", { class: "page-head" }, h("h1", {}, "Events"), h("p", { class: "muted" }, "Every state change, as it happens: acquisitions, endings with their cause, conflicts, claims and progress.")),
    card(h("span", {}, "Live feed ", status), h("div", {}, message, h("div", { class: "table-scroll" }, table)), {
      actions: h("div", { class: "toolbar" }, typeSelect, input("key", "Key"), input("holder", "Holder"), pause),
    }),
  );

  const filtered = () => Object.values(filters).some((v) => v);

  function add(e, prepend = true) {
    if (paused) return;
    if (prepend) tbody.prepend(eventRow(e));
    else tbody.append(eventRow(e));
    while (tbody.children.length > MAX_ROWS) tbody.lastChild.remove();
  }

  function renderEmpty() {
    if (!tbody.children.length) tbody.append(h("tr", { class: "empty-row" }, h("td", { colspan: 8, class: "empty" }, filtered() ? "No matching events yet." : "No events yet.")));
  }

  function onEvent(e) {
    tbody.querySelector(".empty-row")?.remove();
    add(e);
  }

  function setFilter(name, value) {
    filters[name] = value;
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    history.replaceState(null, "", `#/events${q.toString() ? `?${q}` : ""}`);
    start();
  }

  const offState = onFeedState((state, problem) => {
    if (!filtered()) showState(state, problem);
  });
  function showState(state, problem) {
    clear(status, { live: "· live", connecting: "· connecting…", reconnecting: "· reconnecting…", error: "· error" }[state] ?? "");
    if (problem && state === "error") clear(message, problemBox(problem));
    else clear(message);
  }

  let offFeed = () => {};
  async function start() {
    offFeed();
    offFeed = () => {};
    controller?.abort();
    stream?.stop();
    stream = null;
    clear(tbody);
    if (!filtered()) {
      for (const e of feed.events.slice(-MAX_ROWS)) add(e);
      renderEmpty();
      offFeed = onFeedEvent(onEvent);
      showState(feed.state, feed.problem);
      return;
    }
    controller = new AbortController();
    const signal = controller.signal;
    showState("connecting");
    let after = null;
    try {
      const recent = await recentEvents(filters, 100, signal);
      if (signal.aborted || !alive) return;
      for (const e of recent.events) add(e);
      after = recent.next;
    } catch (err) {
      if (signal.aborted || !alive) return;
      clear(message, problemBox(err));
    }
    renderEmpty();
    stream = new EventStream({
      filters: Object.fromEntries(Object.entries(filters).filter(([, v]) => v)),
      after,
      onEvent,
      onState: (state, problem) => showState(state, problem),
    }).start();
  }

  start();
  return {
    unmount() {
      alive = false;
      clearTimeout(debounce);
      offFeed();
      offState();
      controller?.abort();
      stream?.stop();
    },
  };
}
