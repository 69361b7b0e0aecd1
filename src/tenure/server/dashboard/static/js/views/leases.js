// Live leases: server-side paging by key (`after` cursor) with prefix/holder/task filters,
// countdowns that tick every second, refreshed on events and periodically. "By session" groups
// the page's leases under their holder and session (which agent session holds which files);
// a subtree lease (it holds every key under its own) is marked in its key cell.

import { api, enc, session } from "../api.js";
import { badge, card, clear, fmtInt, h, problemBox, throttle, timeEl, toast, keyLink } from "../dom.js";
import { askForceRelease } from "../force.js";
import { CHANGES, onFeedEvent } from "../feed.js";
import { countdown, holderOf, holderText, tickCountdowns } from "./common.js";

const SIZES = [50, 100, 250];

export function leases(el, _arg, query) {
  const st = {
    prefix: query.get("prefix") ?? "",
    holder: query.get("holder") ?? "",
    task: query.get("task") ?? "",
    size: 50,
    grouped: query.get("group") === "session",
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
  const prev = h("button", { type: "button", class: "btn", id: "leases-prev", onclick: () => go(-1) }, "← Previous");
  const next = h("button", { type: "button", class: "btn", id: "leases-next", onclick: () => go(1) }, "Next →");
  const range = h("span", { class: "muted", id: "leases-range" });
  const message = h("div");
  const tbody = h("tbody", { id: "leases-body" });
  const table = h(
    "table",
    { class: "table leases-table" },
    h("thead", {}, h("tr", {}, ["Key", "Holder", "Task", "Token", "Expires in", "Renewals", "Acquired"].map((t) => h("th", { class: t === "Token" || t === "Renewals" ? "num" : "" }, t)), canForce ? h("th", {}) : null)),
    tbody,
  );

  el.append(
    h("div", { class: "page-head" }, h("h1", {}, "Leases"), h("p", { class: "muted" }, "Every live lease, by key. Countdowns use the server's clock.")),
    card(
      h("span", {}, "Live leases ", h("span", { class: "count", id: "leases-total" })),
      h("div", {}, message, h("div", { class: "table-scroll" }, table)),
      {
        actions: h("div", { class: "toolbar" }, input("prefix", "Key prefix"), input("holder", "Holder"), input("task", "Task"), sizeSelect, groupToggle),
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
        query: { prefix: st.prefix, holder: st.holder, task: st.task, after: st.cursors[st.page], limit: st.size + 1 },
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
    const filtered = st.prefix || st.holder || st.task;
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
        ? st.grouped ? groupedRows(st.rows) : st.rows.map(row)
        : h("tr", {}, h("td", { colspan: columns, class: "empty" }, st.prefix || st.holder || st.task ? "No live lease matches." : "No live leases.")),
    );
    renderRange();
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
    return h(
      "tr",
      { dataset: { key: lease.key, scope: lease.scope ?? "key" } },
      h(
        "td",
        { class: "mono key-cell", title: subtree ? `${lease.key}: every key under it` : lease.key },
        keyLink(lease.key),
        subtree ? badge("subtree", "subtree") : null,
      ),
      h("td", { class: "holder-cell" }, holderOf(lease)),
      h("td", { class: "muted" }, lease.task ?? ""),
      h("td", { class: "mono num" }, String(lease.token)),
      h("td", { class: "nowrap" }, countdown(lease)),
      h("td", { class: "num" }, fmtInt(lease.renewals)),
      h("td", { class: "nowrap muted" }, timeEl(lease.acquired_at)),
      canForce
        ? h("td", { class: "actions" }, h("button", { type: "button", class: "btn btn-small btn-danger-ghost", dataset: { action: "force-release" }, onclick: () => forceRelease(lease) }, "Force-release"))
        : null,
    );
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
