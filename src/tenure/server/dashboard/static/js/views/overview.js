// Overview: the numbers of /v1/stats, the endings chart, hottest keys, expiring holders, and the
// latest events.

import { api } from "../api.js";
import { endingsChart } from "../chart.js";
import { recentEvents } from "../sse.js";
import { card, clear, empty, fmtDuration, fmtInt, fmtShare, h, keyLink, problemBox, throttle } from "../dom.js";
import { ENDINGS, feed, onFeedEvent } from "../feed.js";
import { stuckClaims, countByState } from "../stuck.js";
import { eventLine, itemRow, sizeBars, stateBadge } from "./common.js";

// The events after which a claim may have become stuck (or unstuck).
const STUCK_EVENTS = new Set(["expired", "stalled", "force_released", "taken_over", "reassigned", "claimed", "completed", "cancelled"]);

const SPANS = [
  { label: "1 h", span: 3_600_000, bucket: 60_000 },
  { label: "6 h", span: 21_600_000, bucket: 300_000 },
  { label: "24 h", span: 86_400_000, bucket: 1_200_000 },
];

function stat(label, value, sub = null, cls = "") {
  return h("div", { class: `stat ${cls}` }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value" }, value), sub ? h("div", { class: "stat-sub" }, sub) : null);
}

function shareClass(x) {
  if (x === null || x === undefined) return "";
  if (x >= 0.25) return "stat-bad";
  if (x >= 0.1) return "stat-warn";
  return "stat-good";
}

function bar(value, max, cls) {
  const el = h("span", { class: `hbar-fill ${cls}` });
  el.style.width = `${max ? Math.max(2, (value / max) * 100) : 0}%`;
  return h("span", { class: "hbar" }, el);
}

export function overview(el) {
  let span = SPANS[0];
  const stats = h("div", { class: "stat-grid", id: "stats" }, h("div", { class: "stat skeleton" }));
  const chartBody = h("div", { class: "chart-body", id: "chart" }, empty("Loading…"));
  const endingsBody = h("div", { id: "endings" });
  const hotBody = h("div", { id: "hottest" });
  const expBody = h("div", { id: "expiring" });
  const recent = h("ul", { class: "event-lines", id: "recent-events" });
  // Files changed by one session while another held them: shown first, when there are any.
  const unleasedList = h("ul", { class: "event-lines", id: "unleased-edits" });
  const alerts = h("div", { id: "alerts", hidden: true },
    card("Held files changed by another session", unleasedList, {
      actions: h("a", { href: "#/events?type=unleased_edit", class: "card-link" }, "All of them →"),
    }));
  const spanButtons = h(
    "div",
    { class: "segmented" },
    SPANS.map((sp) =>
      h("button", { type: "button", class: sp === span ? "active" : "", onclick: (e) => {
        span = sp;
        for (const b of spanButtons.children) b.classList.toggle("active", b === e.currentTarget);
        loadTimeline();
      } }, sp.label),
    ),
  );

  // Claims that need a person: lapsed, stalled, revoked (the API's words), with links.
  const stuckCounts = h("div", { class: "stuck-counts", id: "stuck-counts" });
  const stuckList = h("ul", { class: "item-list", id: "stuck-items" });
  const stuckCard = card(h("span", {}, "Stuck ", h("span", { class: "count", id: "stuck-total" })), h("div", {}, stuckCounts, stuckList,
    h("p", { class: "muted small stuck-hint" }, "Open an item to take it over, reassign or cancel it.")),
  { cls: "stuck-card", actions: h("a", { href: "#/queue", class: "card-link" }, "Queue →") });
  stuckCard.id = "stuck";

  el.append(
    h("div", { class: "page-head" }, h("h1", {}, "Overview"), h("p", { class: "muted" }, "Where work ends: released by its holder, or expired mid-task.")),
    alerts,
    stats,
    stuckCard,
    h("div", { class: "grid grid-2-1" },
      card("Lease endings over time", chartBody, { actions: spanButtons }),
      card("Endings, all time", endingsBody)),
    h("div", { class: "grid grid-3" },
      card("Hottest keys", hotBody),
      card("Holders that expire most", expBody),
      card("Latest events", recent, { actions: h("a", { href: "#/events", class: "card-link" }, "All events →") })),
  );

  async function loadStats() {
    let r;
    try {
      r = await api("/v1/stats");
    } catch (err) {
      clear(stats, problemBox(err));
      return;
    }
    const w1 = r.windows?.["1h"] ?? {};
    const w24 = r.windows?.["24h"] ?? {};
    clear(
      stats,
      stat("Live leases", fmtInt(r.live_leases)),
      stat("Live claims", fmtInt(r.live_claims), r.stalled_claims ? `${fmtInt(r.stalled_claims)} stalled` : null),
      stat("Acquisitions", fmtInt(r.acquisitions), `${fmtInt(w1.acquisitions)} in the last hour`),
      stat("Conflicts", fmtInt(r.conflicts), `${fmtInt(w1.conflicts)} in the last hour`),
      stat("Expired · last hour", fmtShare(w1.expired_share), `${fmtInt(w1.endings?.expired)} of ${fmtInt(w1.ended)} endings`, shareClass(w1.expired_share)),
      stat("Expired · last day", fmtShare(w24.expired_share), `${fmtInt(w24.endings?.expired)} of ${fmtInt(w24.ended)} endings`, shareClass(w24.expired_share)),
      stat("Hold time p50", fmtDuration(r.hold_ms?.p50), `p99 ${fmtDuration(r.hold_ms?.p99)} · last day`),
    );
    const endings = r.endings ?? {};
    const names = [["released", "Released"], ["completed", "Completed"], ["expired", "Expired"], ["force_released", "Force-released"], ["taken_over", "Taken over"]];
    const max = Math.max(0, ...names.map(([k]) => endings[k] ?? 0));
    clear(
      endingsBody,
      h("table", { class: "table table-compact" }, h("tbody", {}, names.map(([k, label]) =>
        h("tr", { dataset: { ending: k } }, h("td", {}, label), h("td", { class: "num" }, fmtInt(endings[k] ?? 0)), h("td", { class: "bar-cell" }, bar(endings[k] ?? 0, max, `fill-${k}`)))))),
    );
    const hot = r.hottest_keys ?? [];
    const hotMax = Math.max(0, ...hot.map((x) => x.conflicts));
    clear(
      hotBody,
      hot.length
        ? h("table", { class: "table table-compact" },
            h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", { class: "num" }, "Conflicts"), h("th", {}))),
            h("tbody", {}, hot.map((x) => h("tr", {}, h("td", { class: "truncate hot-key" }, keyLink(x.key, 32)), h("td", { class: "num" }, fmtInt(x.conflicts)), h("td", { class: "bar-cell" }, bar(x.conflicts, hotMax, "fill-conflict"))))))
        : empty("No conflicts yet."),
    );
    const exp = r.expiring_holders ?? [];
    clear(
      expBody,
      exp.length
        ? h("table", { class: "table table-compact" },
            h("thead", {}, h("tr", {}, h("th", {}, "Holder"), h("th", { class: "num" }, "Expired"), h("th", { class: "num" }, "Ended"), h("th", { class: "num" }, "Share"))),
            h("tbody", {}, exp.map((x) => h("tr", {}, h("td", { class: "truncate" }, x.holder), h("td", { class: "num" }, fmtInt(x.expired)), h("td", { class: "num" }, fmtInt(x.ended)), h("td", { class: `num ${shareClass(x.expired_share)}` }, fmtShare(x.expired_share))))))
        : empty("No lease has expired."),
    );
  }

  async function loadTimeline() {
    try {
      const t = await api("/v1/stats/timeline", { query: { span_ms: span.span, bucket_ms: span.bucket } });
      clear(chartBody, endingsChart(t));
    } catch (err) {
      clear(chartBody, problemBox(err));
    }
  }

  async function loadStuck() {
    let views;
    try {
      views = await stuckClaims();
    } catch (err) {
      if (alive) clear(stuckList, problemBox(err));
      return;
    }
    if (!alive) return;
    clear(document.getElementById("stuck-total") ?? h("span"), String(views.length));
    stuckCard.classList.toggle("stuck-some", views.length > 0);
    clear(stuckCounts, [...countByState(views)].map(([word, n]) =>
      h("span", { class: "stuck-count", dataset: { state: word } }, h("strong", {}, fmtInt(n)), " ", stateBadge(word))));
    clear(stuckList, views.length
      ? views.slice(0, 10).map((v) => itemRow(v.item, { state: v.lease_state }))
      : h("li", { class: "empty" }, "Nothing is stuck: every claim is live."));
    sizeBars(stuckList);
  }

  function renderRecent() {
    const last = feed.events.slice(-12).reverse();
    clear(recent, last.length ? last.map(eventLine) : h("li", { class: "empty" }, "No events yet."));
  }

  const unleased = [];
  function showUnleased(e) {
    if (unleased.some((x) => x.id === e.id)) return; // from the log and the live feed both
    unleased.unshift(e);
    unleased.sort((a, b) => b.id - a.id);
    unleased.splice(10);
    clear(unleasedList, unleased.map(eventLine));
    alerts.hidden = false;
  }
  async function loadUnleased() {
    try {
      const r = await recentEvents({ type: "unleased_edit" }, 10);
      for (const e of r.events) showUnleased(e);
    } catch {
      // the alerts are extra: the rest of the overview says what went wrong
    }
  }

  let alive = true;
  const statsSoon = throttle(() => alive && loadStats(), 1500);
  const timelineSoon = throttle(() => alive && loadTimeline(), 3000);
  const stuckSoon = throttle(() => alive && loadStuck(), 1500);
  const off = onFeedEvent((e) => {
    renderRecent();
    if (e.type === "unleased_edit") showUnleased(e);
    if (ENDINGS.has(e.type) || e.type === "acquired" || e.type === "conflict") statsSoon();
    if (ENDINGS.has(e.type)) timelineSoon();
    if (STUCK_EVENTS.has(e.type) || e.key?.startsWith("items/")) stuckSoon();
  });
  loadStats();
  loadTimeline();
  renderRecent();
  loadUnleased();
  loadStuck();
  const timers = [setInterval(loadStats, 15_000), setInterval(loadTimeline, 30_000), setInterval(loadStuck, 10_000)];
  return {
    unmount() {
      alive = false;
      off();
      timers.forEach(clearInterval);
    },
  };
}
