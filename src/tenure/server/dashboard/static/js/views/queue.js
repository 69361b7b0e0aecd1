// The work queue: ready, in progress (live / stalled / lapsed / revoked), done, and the queue
// of each person with work in progress.

import { api, enc } from "../api.js";
import { card, clear, empty, fmtInt, h, problemBox, throttle } from "../dom.js";
import { CHANGES, onFeedEvent } from "../feed.js";
import { itemRow, sizeBars } from "./common.js";

const MAX_PEOPLE = 40;

export function queue(el, _arg, query) {
  let alive = true;
  let seq = 0;
  const lookup = query.get("who") ?? "";
  const ready = h("ul", { class: "item-list", id: "queue-ready" });
  const progress = h("ul", { class: "item-list", id: "queue-progress" });
  const done = h("ul", { class: "item-list", id: "queue-done" });
  const people = h("div", { class: "people", id: "queue-people" });
  const counts = { ready: h("span", { class: "count" }), progress: h("span", { class: "count" }), done: h("span", { class: "count" }) };
  const who = h("input", { type: "search", class: "input", placeholder: "Principal name", value: lookup, name: "who", spellcheck: "false" });
  const lookupBox = h("div", { id: "queue-lookup" });
  const message = h("div");

  el.append(
    h("div", { class: "page-head" }, h("h1", {}, "Queue"), h("p", { class: "muted" }, "Ready work by priority, work in progress with the state of its claim, and what was done.")),
    message,
    h("div", { class: "grid grid-3 queue-columns" },
      card(h("span", {}, "Ready ", counts.ready), ready),
      card(h("span", {}, "In progress ", counts.progress), progress),
      card(h("span", {}, "Done ", counts.done), done)),
    h("div", { class: "section-head" },
      h("h2", {}, "Per-person queues"),
      h("form", { class: "toolbar", onsubmit: (e) => {
        e.preventDefault();
        showLookup(who.value.trim());
      } }, who, h("button", { type: "submit", class: "btn" }, "Show queue"))),
    lookupBox,
    people,
  );

  function personCard(name, views) {
    return h(
      "section",
      { class: "card person", dataset: { person: name } },
      h("header", { class: "card-head" }, h("h2", {}, name), h("span", { class: "count" }, fmtInt(views.length))),
      views.length ? h("ul", { class: "item-list" }, views.map((v) => itemRow(v.item, { state: v.state ?? v.lease_state }))) : empty("Nothing assigned."),
    );
  }

  async function showLookup(name) {
    if (!name) {
      clear(lookupBox);
      return;
    }
    try {
      const r = await api(`/v1/queue/${enc(name)}`);
      clear(lookupBox, h("div", { class: "people" }, personCard(name, r.items)));
    } catch (err) {
      clear(lookupBox, problemBox(err));
    }
    sizeBars(lookupBox);
  }

  async function load() {
    const mine = ++seq;
    let r;
    try {
      r = await Promise.all([
        api("/v1/ready", { query: { limit: 50 } }),
        api("/v1/items", { query: { status: "in_progress", limit: 200 } }),
        api("/v1/items", { query: { status: "done", limit: 1000 } }),
      ]);
    } catch (err) {
      if (mine === seq && alive) clear(message, problemBox(err));
      return;
    }
    const [readyR, progressR, doneR] = r;
    // the claim's state (word and moment) comes from the assignees' queues (one request per
    // person, capped).
    const assignees = [...new Set(progressR.items.map((i) => i.assignee).filter(Boolean))].sort().slice(0, MAX_PEOPLE);
    const queues = await Promise.all(assignees.map((a) => api(`/v1/queue/${enc(a)}`).then((q) => [a, q.items], () => [a, null])));
    if (mine !== seq || !alive) return;
    clear(message);
    const states = new Map();
    for (const [, views] of queues) for (const v of views ?? []) states.set(v.item.id, v.state ?? { word: v.lease_state });

    clear(counts.ready, fmtInt(readyR.items.length));
    clear(ready, readyR.items.length ? readyR.items.map((i) => itemRow(i)) : empty("Nothing is ready."));

    const order = { lapsed: 0, revoked: 0, reassigned: 0, stalled: 1, live: 2 };
    const rank = (id) => order[states.get(id)?.word] ?? 3;
    const inProgress = [...progressR.items].sort((a, b) => rank(a.id) - rank(b.id) || a.priority - b.priority);
    clear(counts.progress, fmtInt(inProgress.length));
    clear(progress, inProgress.length ? inProgress.map((i) => itemRow(i, { state: states.get(i.id) ?? "unknown" })) : empty("Nothing in progress."));

    const recentDone = [...doneR.items].sort((a, b) => b.updated_at - a.updated_at).slice(0, 50);
    clear(counts.done, doneR.items.length >= 1000 ? "1000+" : fmtInt(doneR.items.length));
    clear(done, recentDone.length ? recentDone.map((i) => itemRow(i)) : empty("Nothing done yet."));

    clear(people, queues.length ? queues.map(([name, views]) => (views ? personCard(name, views.filter((v) => v.item.assignee === name)) : null)) : empty("Nobody has work in progress."));
    sizeBars(el);
  }

  const soon = throttle(() => alive && load(), 1000);
  const off = onFeedEvent((e) => {
    if (CHANGES.has(e.type) && e.type !== "renewed") soon();
  });
  load();
  if (lookup) showLookup(lookup);
  const timer = setInterval(load, 10_000);
  return {
    unmount() {
      alive = false;
      off();
      clearInterval(timer);
    },
  };
}
