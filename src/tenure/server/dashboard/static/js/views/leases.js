// Leases: live ones, or (the filter) those that expired or were released, with the cause;
// server-side paging by key (`after` cursor) with prefix/holder/task filters,
// countdowns that tick every second, refreshed on events and periodically. "By session" groups
// the page's leases under their holder and session (which agent session holds which files);
// a subtree lease (it holds every key under its own) is marked in its key cell. A semaphore's
// live slot leases are one row, "gpu — 2/3 held", with its holders under it, one row a slot.

import { api, enc, session } from "../api.js";
import { badge, card, clear, fmtDateTime, fmtInt, h, itemLink, problemBox, throttle, timeEl, toast, keyLink } from "../dom.js";
import { askForceRelease } from "../force.js";
import { CHANGES, onFeedEvent } from "../feed.js";
import { countdown, holderOf, holderText, keyRoom, tickCountdowns } from "./common.js";

const SIZES = [50, 100, 250];
// The filter by state: the live leases, or the latest lease of each key that ended that way.
const STATES = [
  ["live", "Live"],
  ["expired", "Expired"],
  ["released", "Released"],
  ["all", "All"],
];
const TITLES = { live: "Live leases", expired: "Expired leases", released: "Released leases", all: "Leases" };
const NONE = {
  live: "No live leases.",
  expired: "No expired leases: every lease ended by a release, or is live.",
  released: "No released leases.",
  all: "No leases.",
};
const ENDED_WORD = { expired: "expired", released: "released", force_released: "force-released", taken_over: "taken over" };

const HEADS = [["Key", ""], ["Holder", ""], ["Task", "col-2"], ["Token", "num col-2"], ["Expires in · ended", ""], ["Renewals", "num col-2"], ["Acquired", "col-2"]];
const CAUSED = new Set(["force_released", "taken_over"]);
const causeId = (lease) => `${lease.key}\u0000${lease.token}`;

export function leases(el, _arg, query) {
  const st = {
    prefix: query.get("prefix") ?? "",
    holder: query.get("holder") ?? "",
    task: query.get("task") ?? "",
    size: 50,
    grouped: query.get("group") === "session",
    state: STATES.some(([k]) => k === query.get("state")) ? query.get("state") : "live",
    cursors: [null], // cursors[i]: the `after` of page i
    page: 0,
    hasNext: false,
    rows: [],
    total: null,
  };
  let seq = 0;
  let alive = true;
  const canForce = session.canForce();

  const input = (name, placeholder) =>
    h("input", { type: "search", name, placeholder, value: st[name], class: "input", spellcheck: "false", oninput: (e) => {
      st[name] = e.target.value.trim();
      filtersChanged();
    } });
  const sizeSelect = h("select", { class: "input input-narrow", name: "size", onchange: (e) => {
    st.size = Number(e.target.value);
    filtersChanged(0);
  } }, SIZES.map((n) => h("option", { value: String(n) }, `${n} per page`)));
  const groupToggle = h(
    "label",
    { class: "toggle", title: "Group the leases of this page by holder and session" },
    h("input", { type: "checkbox", name: "group", checked: st.grouped, onchange: (e) => {
      st.grouped = e.target.checked;
      render();
    } }),
    "By session",
  );
  const stateButtons = h(
    "div",
    { class: "segmented", id: "leases-state", role: "group", "aria-label": "Lease state" },
    STATES.map(([k, label]) =>
      h("button", { type: "button", class: k === st.state ? "active" : "", dataset: { state: k }, onclick: (e) => {
        st.state = k;
        for (const b of stateButtons.children) b.classList.toggle("active", b === e.currentTarget);
        clear(title, TITLES[k]);
        filtersChanged(0);
      } }, label),
    ),
  );
  const title = h("span", { id: "leases-title" }, TITLES[st.state]);
  const prev = h("button", { type: "button", class: "btn", id: "leases-prev", onclick: () => go(-1) }, "← Previous");
  const next = h("button", { type: "button", class: "btn", id: "leases-next", onclick: () => go(1) }, "Next →");
  const range = h("span", { class: "muted", id: "leases-range" });
  const message = h("div");
  const tbody = h("tbody", { id: "leases-body" });
  const table = h(
    "table",
    { class: "table leases-table" },
    h("thead", {}, h("tr", {}, HEADS.map(([t, cls]) => h("th", { class: cls }, t)), canForce ? h("th", { class: "col-2" }) : null)),
    tbody,
  );

  el.append(
    h("div", { class: "page-head" }, h("h1", {}, "Leases"), h("p", { class: "muted" }, "Leases by key: the live ones, or those that expired or were released, with the cause. Countdowns use the server's clock.")),
    card(
      h("span", {}, title, " ", h("span", { class: "count", id: "leases-total" })),
      h("div", {}, message, h("div", { class: "table-scroll" }, table)),
      {
        actions: h("div", { class: "toolbar" }, stateButtons, input("prefix", "Key prefix"), input("holder", "Holder"), input("task", "Task"), sizeSelect, groupToggle),
      },
    ),
    h("div", { class: "pager" }, range, h("div", { class: "pager-buttons" }, prev, next)),
  );

  let debounce = null;
  let pending = false; // filters changed, the first page not asked for yet
  function filtersChanged(delay = 250) {
    clearTimeout(debounce);
    prev.disabled = next.disabled = true; // the pages change with the filters
    seq += 1; // a page still loading is stale
    pending = true;
    debounce = setTimeout(() => {
      pending = false;
      st.cursors = [null];
      st.page = 0;
      load();
    }, delay);
  }

  function go(dir) {
    if (pending) return;
    if (dir > 0 && !st.hasNext) return;
    if (dir < 0 && st.page === 0) return;
    st.page += dir;
    load();
  }

  async function load() {
    if (pending) return; // the debounced load comes
    const mine = ++seq;
    let r;
    try {
      r = await api("/v1/leases", {
        query: { prefix: st.prefix, holder: st.holder, task: st.task, after: st.cursors[st.page], limit: st.size + 1, state: st.state === "live" ? null : st.state },
      });
    } catch (err) {
      if (mine === seq && alive) clear(message, problemBox(err));
      return;
    }
    if (mine !== seq || !alive) return;
    clear(message);
    const rows = r.leases.slice(0, st.size);
    if (rows.length === 0 && st.page > 0) {
      // the page emptied (leases ended): step back
      st.page -= 1;
      load();
      return;
    }
    st.hasNext = r.leases.length > st.size;
    st.rows = rows;
    st.cursors[st.page + 1] = rows.length ? rows[rows.length - 1].key : null;
    st.cursors.length = st.page + 2;
    render();
  }

  async function loadTotal() {
    try {
      const r = await api("/v1/stats");
      st.total = r.live_leases;
    } catch {
      st.total = null;
    }
    if (alive) renderRange();
  }

  function renderRange() {
    const first = st.page * st.size;
    const filtered = st.prefix || st.holder || st.task || st.state !== "live";
    clear(document.getElementById("leases-total") ?? h("span"), st.total !== null && !filtered ? fmtInt(st.total) : "");
    clear(
      range,
      st.rows.length
        ? `Showing ${fmtInt(first + 1)}–${fmtInt(first + st.rows.length)}${filtered ? " matching" : st.total !== null ? ` of ${fmtInt(st.total)}` : ""}`
        : "",
    );
    prev.disabled = pending || st.page === 0;
    next.disabled = pending || !st.hasNext;
  }

  const columns = canForce ? 8 : 7;

  function render() {
    clear(
      tbody,
      st.rows.length
        ? st.grouped ? groupedRows(st.rows) : st.state === "live" ? semaphoreRows(st.rows) : st.rows.map(row)
        : h("tr", {}, h("td", { colspan: columns, class: "empty" }, st.prefix || st.holder || st.task ? "No lease matches." : NONE[st.state])),
    );
    renderRange();
    findCauses();
  }

  // The page's leases, each semaphore's slot leases under one row ("gpu — 2/3 held") where its
  // first slot would be, ordered by slot.
  function semaphoreRows(rows) {
    const slotsOf = new Map();
    for (const lease of rows) {
      if (lease.semaphore == null) continue;
      if (!slotsOf.has(lease.semaphore)) slotsOf.set(lease.semaphore, []);
      slotsOf.get(lease.semaphore).push(lease);
    }
    return rows.flatMap((lease) => {
      if (lease.semaphore == null) return [row(lease)];
      const held = slotsOf.get(lease.semaphore);
      if (held === undefined) return []; // listed already, under its semaphore
      slotsOf.delete(lease.semaphore);
      held.sort((a, b) => a.slot - b.slot);
      return [semaphoreRow(lease.semaphore, held), ...held.map(row)];
    });
  }

  function semaphoreRow(key, held) {
    const slots = held[0].slots ?? "?";
    return h(
      "tr",
      { class: "group-row semaphore-row", dataset: { semaphore: key } },
      h(
        "td",
        { colspan: columns, title: `semaphore ${key}: up to ${slots} holders at once, each on a slot key ${key}#slot/I` },
        h("span", { class: "mono semaphore-key" }, key),
        " — ",
        h("span", { class: "semaphore-held" }, `${held.length}/${slots} held`),
        h("span", { class: "muted group-what" }, "semaphore"),
      ),
    );
  }

  // The page's leases under one header row per holder and session, in order of first key.
  function groupedRows(rows) {
    const groups = new Map();
    for (const lease of rows) {
      const id = `${lease.holder}\u0000${lease.session ?? ""}`;
      if (!groups.has(id)) groups.set(id, []);
      groups.get(id).push(lease);
    }
    return [...groups.values()].flatMap((leases) => {
      const first = leases[0];
      const subtrees = leases.filter((l) => l.scope === "subtree").length;
      const head = h(
        "tr",
        { class: "group-row", dataset: { holder: first.holder, session: first.session ?? "" } },
        h(
          "td",
          { colspan: columns },
          h("span", { class: "holder" }, first.holder),
          h("span", { class: "session muted mono", title: "session" }, first.session || "default session"),
          h("span", { class: "count group-count" }, fmtInt(leases.length)),
          h("span", { class: "muted group-what" }, leases.length === 1 ? "lease" : "leases"),
          subtrees ? h("span", { class: "muted group-what" }, `(${subtrees} subtree${subtrees === 1 ? "" : "s"})`) : null,
        ),
      );
      return [head, ...leases.map(row)];
    });
  }

  function row(lease) {
    const subtree = lease.scope === "subtree";
    const live = lease.state === "live";
    const slot = lease.semaphore != null;
    return h(
      "tr",
      { class: slot ? "slot-row" : null, dataset: { key: lease.key, scope: lease.scope ?? "key", state: lease.state ?? "live", ...(slot ? { slot: String(lease.slot) } : {}) } },
      h(
        "td",
        { class: "mono key-cell", title: subtree ? `${lease.key}: every key under it` : lease.key },
        slot && !st.grouped && st.state === "live"
          ? h("span", { class: "slot-label" }, `slot ${lease.slot}`)
          : keyLink(lease.key, keyRoom()),
        subtree ? badge("subtree", "subtree") : null,
        slot ? h("span", { class: "muted small slot-of" }, ` of ${lease.slots ?? "?"}`) : null,
      ),
      h("td", { class: "holder-cell" }, holderOf(lease)),
      h("td", { class: "muted col-2" }, lease.task ?? ""),
      h("td", { class: "mono num col-2" }, String(lease.token)),
      h("td", { class: live ? "nowrap" : "ended-cell" }, live ? countdown(lease) : ended(lease)),
      h("td", { class: "num col-2" }, fmtInt(lease.renewals)),
      h("td", { class: "nowrap muted col-2" }, timeEl(lease.acquired_at)),
      canForce
        ? h("td", { class: "actions col-2" }, live ? h("button", { type: "button", class: "btn btn-small btn-danger-ghost", dataset: { action: "force-release" }, onclick: () => forceRelease(lease) }, "Force-release") : null)
        : null,
    );
  }

  // How a lease ended, and what to do about it: the API's state, when, and for a force-release
  // or a takeover who did it and why (from its event, looked up once: findCauses).
  function ended(lease) {
    const item = lease.key.startsWith("items/") ? lease.key.slice(6) : null;
    const word = ENDED_WORD[lease.state] ?? lease.state;
    const when = lease.state === "expired" ? [" at ", h("span", { class: "nowrap" }, fmtDateTime(lease.expires_at)), " (", timeEl(lease.expires_at), ")"] : null;
    const todo = item !== null
      ? [lease.state === "released" ? "The claim ended; " : "The item may still be assigned: ", itemLink(item, "open the item"), lease.state === "released" ? " for its state." : " to take it over, reassign or cancel it."]
      : "Free: anyone may acquire the key now.";
    return h(
      "div",
      { class: "ended" },
      h("div", {}, badge(word, `state-${lease.state}`), when),
      CAUSED.has(lease.state) ? h("div", { class: "cause", dataset: { key: lease.key, token: String(lease.token) } }, causes.get(causeId(lease)) ?? "") : null,
      h("div", { class: "muted small todo" }, todo),
    );
  }

  // Who force-released (or took over) a lease, and why: its event, once per lease.
  const causes = new Map();
  async function findCauses() {
    for (const lease of st.rows) {
      if (!CAUSED.has(lease.state) || causes.has(causeId(lease))) continue;
      causes.set(causeId(lease), "");
      try {
        const r = await api("/v1/events", { query: { key: lease.key, type: lease.state, limit: 1000 } });
        const e = [...r.events].reverse().find((x) => x.token === lease.token) ?? r.events[r.events.length - 1];
        if (!e) continue;
        causes.set(causeId(lease), `by ${e.actor ?? "?"}${e.reason ? `: ${e.reason}` : ""}`);
      } catch {
        continue; // the cause is extra: the state still says what happened
      }
      for (const cell of tbody.querySelectorAll(".cause")) {
        if (cell.dataset.key === lease.key && cell.dataset.token === String(lease.token)) cell.textContent = causes.get(causeId(lease));
      }
    }
  }

  // An item's claim (`items/<id>`) is force-released through the item, which keeps its
  // assignee (revoked); the generic route refuses item keys.
  async function forceRelease(lease) {
    const item = lease.key.startsWith("items/") ? lease.key.slice(6) : null;
    const what = [h("span", { class: "mono" }, lease.key), ` held by ${holderText(lease)}, token ${lease.token}`];
    if (item !== null) what.push(": the claim of an item; its assignee stays (revoked).");
    const done = await askForceRelease(what, (reason) =>
      item !== null
        ? api(`/v1/items/${enc(item)}/force-release`, { method: "POST", body: { reason } })
        : api("/v1/leases/force-release", { method: "POST", body: { key: lease.key, reason } }),
    );
    if (done) {
      toast(`Force-released ${lease.key}`, "success");
      load();
    }
  }

  const soon = throttle(() => alive && load(), 1000);
  const off = onFeedEvent((e) => {
    if (CHANGES.has(e.type)) soon();
  });
  load();
  loadTotal();
  const timers = [
    setInterval(() => tickCountdowns(tbody), 1000),
    setInterval(load, 5000),
    setInterval(loadTotal, 15_000),
  ];
  return {
    unmount() {
      alive = false;
      off();
      clearTimeout(debounce);
      timers.forEach(clearInterval);
    },
  };
}
