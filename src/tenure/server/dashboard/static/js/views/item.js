// One item: its fields, claim (lease with countdown, live / stalled / lapsed / revoked /
// reassigned, in the words and moment the server decided),
// progress, transfer history and the events of its lease key; force-release and reassign for
// the authorities over it (admins, supervisors, the assignee's ancestors).

import { api, enc, session } from "../api.js";
import { badge, card, clear, empty, fmtDateTime, fmtInt, h, itemLink, problemBox, throttle, timeEl, toast } from "../dom.js";
import { askForceRelease, askReason, askReassign } from "../force.js";
import { onFeedEvent } from "../feed.js";
import { countdown, eventRow, eventTable, holderOf, holderText, priorityBadge, sizeBars, stateBadge, stateText, tickCountdowns } from "./common.js";

const TRANSFER_LABEL = {
  claimed: "claimed",
  released: "released",
  expired: "expired",
  taken_over: "taken over",
  force_released: "force-released",
  completed: "completed",
  cancelled: "cancelled",
  reassigned: "reassigned",
  reopened: "reopened",
};
const CLOSED = new Set(["done", "cancelled"]);
// the states whose lease is held (its countdown runs); the rest happened in the past
const AHEAD = new Set(["live", "stalled"]);

// What a claim's state means, beside its badge.
function claimNote(view) {
  const it = view.item;
  const l = view.lease;
  if (view.lease_state === "revoked") {
    return `Force-released: ${it.assignee} keeps the item, but claims it again only with a takeover and a reason (or an authority reassigns it).`;
  }
  if (view.lease_state === "reassigned") {
    return `Reassigned: this lease is of the earlier claim (${l?.holder ?? "—"}); ${it.assignee} has not claimed the item yet (and needs no takeover to).`;
  }
  if (view.lease_state === "stalled") {
    return "Live, but no progress for a while (the policy's stall_after): it may be taken over with a reason.";
  }
  if (l && it.assignee && l.holder !== it.assignee && l.state !== "live") {
    return `This lease is of an earlier claim (${l.holder}); ${it.assignee} has not claimed the item yet.`;
  }
  return null;
}

// "parked after 3 attempts: lapsed, lapsed, command_exited (status 1)", as the CLI says it.
function parkedWords(it) {
  const said = (it.failures ?? []).map((f) => (f.exit_status == null ? f.reason : `${f.reason} (status ${f.exit_status})`));
  const many = it.attempts === 1 ? "attempt" : "attempts";
  return `parked after ${it.attempts} ${many}${said.length ? `: ${said.join(", ")}` : ""}`;
}

// Whether the signed-in principal may be an authority over the item's assignee: the server
// decides (an ancestor is any dispatcher up the chain; an agent's name only hints at it).
function authority(it) {
  if (session.canForce()) return true;
  const me = session.me?.name;
  return Boolean(me && it.assignee && it.assignee.startsWith(`${me}/`));
}

// The words of a claim that needs someone (the API's: lapsed, stalled, revoked, …).
const FINE = new Set(["live", "none"]);

// Which acts the page offers; the server decides, and its refusal is shown in the dialog.
// Take over: a claim that is not live (or stalled) and not the caller's own lapsed one;
// cancel: the assignee, the creator and the authorities over the assignee.
function offers(view) {
  const it = view.item;
  const me = session.me?.name;
  const open = !CLOSED.has(it.status);
  const stuck = it.assignee && !FINE.has(view.lease_state ?? "none");
  return {
    takeover: open && stuck && (it.assignee !== me || view.lease_state === "revoked"),
    cancel: open && (authority(it) || it.assignee === me || it.created_by === me),
    reopen: it.status === "parked" && (authority(it) || it.assignee === me || it.created_by === me),
  };
}

function field(label, ...value) {
  return [h("dt", {}, label), h("dd", {}, ...value)];
}

export function item(el, id) {
  let alive = true;
  const key = `items/${id}`;
  const body = h("div", { class: "item-page" }, empty("Loading…"));
  el.append(body);

  function transfersTable(transfers) {
    if (!transfers.length) return empty("No transfers yet: nobody has claimed it.");
    return h(
      "table",
      { class: "table transfers-table", id: "transfers" },
      h("thead", {}, h("tr", {}, ["When", "What", "From", "To", "Epoch", "By", "Note"].map((t) => h("th", {}, t)))),
      h("tbody", {}, [...transfers].reverse().map((t) =>
        h("tr", { dataset: { reason: t.reason } },
          h("td", { class: "nowrap muted", title: fmtDateTime(t.at) }, timeEl(t.at)),
          h("td", {}, badge(TRANSFER_LABEL[t.reason] ?? t.reason, t.reason)),
          h("td", {}, t.from ?? "—"),
          h("td", {}, t.to ?? "—"),
          h("td", { class: "mono num" }, String(t.epoch)),
          h("td", {}, t.actor),
          h("td", { class: "reason-cell" }, t.note ?? "")))),
    );
  }

  function progressBlock(it) {
    const p = it.progress;
    if (!p) return empty("No progress reported yet.");
    const fill = h("span", { class: "progress-fill" });
    if (p.percent !== undefined) fill.style.width = `${p.percent}%`;
    return h(
      "div",
      { class: "progress-block", id: "progress" },
      p.percent !== undefined
        ? h("div", { class: "progress-line" }, h("span", { class: "progress-bar" }, fill), h("strong", { class: "progress-pct" }, `${p.percent}%`))
        : null,
      h("p", { class: "progress-message" }, p.message ?? ""),
      h("p", { class: "muted small" }, `by ${p.by ?? "?"} · `, timeEl(p.at ?? it.progress_at)),
      p.data ? h("pre", { class: "json" }, JSON.stringify(p.data, null, 2)) : null,
    );
  }

  function leaseBlock(view) {
    const l = view.lease;
    const canForce = authority(view.item) && l && l.state === "live";
    const force = canForce
      ? h("button", { type: "button", class: "btn btn-danger", id: "item-force-release", onclick: () => forceRelease(view) }, "Force-release…")
      : null;
    const note = claimNote(view);
    if (!l) return h("div", {}, h("p", { class: "muted" }, "No lease: the item is not claimed."));
    return h(
      "div",
      {},
      note ? h("p", { class: "muted small claim-note", id: "claim-note" }, note) : null,
      h("dl", { class: "fields" },
        field("State", stateBadge(view.lease_state), " ", h("span", { id: "item-state-text" }, stateText(view.state))),
        field("Holder", holderOf(l)),
        field("Task", l.task ?? "—"),
        field("Token (epoch)", h("span", { class: "mono" }, String(l.token))),
        l.state === "live" && AHEAD.has(view.lease_state) ? field("Expires in", countdown(l)) : field("Lease", badge(l.state)),
        field("Renewals", fmtInt(l.renewals)),
        field("Acquired", timeEl(l.acquired_at))),
      force ? h("div", { class: "card-actions" }, force) : null,
    );
  }

  async function forceRelease(view) {
    const done = await askForceRelease(
      [`The claim of ${holderText(view.lease)} on `, h("span", { class: "mono" }, id), ` (epoch ${view.lease.token}) ends now; the assignee stays, but needs a takeover to claim it again (revoked).`],
      (reason) => api(`/v1/items/${enc(id)}/force-release`, { method: "POST", body: { reason } }),
    );
    if (done) {
      toast(`Force-released ${id}`, "success");
      load();
    }
  }

  // Ask why, then `post(reason)`; once it is done, say `said` and show the item again.
  async function withReason(title, what, post, placeholder, said) {
    if (await askReason(title, what, post, placeholder)) {
      toast(said, "success");
      load();
    }
  }

  function takeOver(view) {
    return withReason(
      "Take over",
      [h("span", { class: "mono" }, id), ` is assigned to ${view.item.assignee} (claim ${view.lease_state}). You claim it with a new epoch: the old holder's writes are refused from now on. Reassign it afterwards to whoever will do the work.`],
      (reason) => api(`/v1/items/${enc(id)}/claim`, { method: "POST", body: { takeover: true, reason } }),
      "e.g. the agent crashed; picking it up",
      `Took over ${id}`,
    );
  }

  function reopen() {
    return withReason(
      "Reopen item",
      [h("span", { class: "mono" }, id), " is open and nobody's again, its attempts reset: anyone may claim it. Reopen it once the cause of its failures is dealt with."],
      (reason) => api(`/v1/items/${enc(id)}/reopen`, { method: "POST", body: { reason } }),
      "e.g. fixed the flaky test it kept failing on",
      `Reopened ${id}`,
    );
  }

  function cancel() {
    return withReason(
      "Cancel item",
      [h("span", { class: "mono" }, id), " is closed for good: any live claim ends and nobody can claim it again."],
      (reason) => api(`/v1/items/${enc(id)}/cancel`, { method: "POST", body: { reason } }),
      "e.g. not needed any more",
      `Cancelled ${id}`,
    );
  }

  function actionsCard(view) {
    const can = offers(view);
    const buttons = [
      can.reopen ? h("button", { type: "button", class: "btn btn-primary", id: "item-reopen", onclick: () => reopen() }, "Reopen…") : null,
      can.takeover ? h("button", { type: "button", class: "btn btn-primary", id: "item-takeover", onclick: () => takeOver(view) }, "Take over…") : null,
      authority(view.item) && !CLOSED.has(view.item.status) ? h("button", { type: "button", class: "btn", id: "item-reassign-2", onclick: () => reassign(view.item) }, "Reassign…") : null,
      can.cancel ? h("button", { type: "button", class: "btn btn-danger-ghost", id: "item-cancel", onclick: () => cancel(view.item) }, "Cancel item…") : null,
    ].filter(Boolean);
    if (!buttons.length) return null;
    const stuck = can.takeover;
    const parked = view.item.status === "parked";
    const todo = parked
      ? `The item is ${parkedWords(view.item)}: nobody may claim it until it is reopened (or cancel it).`
      : `The claim is ${view.lease_state}: take it over (with a reason), reassign it, or cancel the item.`;
    const card_ = card("What to do", h("div", {},
      stuck || parked ? h("p", { class: "muted small", id: "item-todo" }, todo) : null,
      h("div", { class: "card-actions" }, buttons)), { cls: stuck || parked ? "actions-card stuck-some" : "actions-card" });
    card_.id = "item-actions";
    return card_;
  }

  async function reassign(it) {
    const done = await askReassign(
      [h("span", { class: "mono" }, id), it.assignee ? ` is assigned to ${it.assignee}: any live claim ends (its epoch is dead), and the new assignee claims it without a takeover.` : " is unassigned: the new assignee claims it without a takeover."],
      (to, reason) => api(`/v1/items/${enc(id)}/reassign`, { method: "POST", body: { to, reason } }),
    );
    if (done) {
      toast(`Reassigned ${id} to ${done.item.assignee}`, "success");
      load();
    }
  }

  async function load() {
    let view;
    let history;
    try {
      [view, history] = await Promise.all([
        api(`/v1/items/${enc(id)}`),
        api("/v1/events", { query: { key, limit: 1000 } }).catch(() => ({ events: [] })),
      ]);
    } catch (err) {
      if (alive) clear(body, h("p", {}, h("a", { href: "#/queue" }, "← Queue")), problemBox(err));
      return;
    }
    if (!alive) return;
    const it = view.item;
    clear(
      body,
      h("p", { class: "crumbs" }, h("a", { href: "#/queue" }, "Queue"), " / ", itemLink(it.id)),
      h("div", { class: "page-head item-head" },
        h("h1", {}, priorityBadge(it.priority), " ", h("span", { id: "item-title" }, it.title)),
        h("div", { class: "item-badges" }, badge(it.status, `status-${it.status}`), it.labels.map((l) => h("span", { class: "label" }, l)))),
      it.body ? h("p", { class: "item-body" }, it.body) : null,
      actionsCard(view),
      h("div", { class: "grid grid-2" },
        card("Item", h("dl", { class: "fields" },
          field("Id", h("span", { class: "mono" }, it.id)),
          field("Status", badge(it.status, `status-${it.status}`)),
          field("Assignee", h("span", { id: "item-assignee" }, it.assignee ?? "—"), it.revoked ? [" ", badge("revoked", "revoked")] : null),
          field("Epoch", h("span", { class: "mono" }, String(it.epoch))),
          field("Attempts", h("span", { id: "item-attempts" }, it.status === "parked" ? parkedWords(it) : String(it.attempts ?? 0))),
          field("Parent", it.parent ? itemLink(it.parent) : "—"),
          field("Created", `${fmtDateTime(it.created_at)} by ${it.created_by}`),
          field("Updated", timeEl(it.updated_at)),
          it.result !== null && it.result !== undefined ? field("Result", h("pre", { class: "json" }, JSON.stringify(it.result, null, 2))) : null),
          { actions: authority(it) && !CLOSED.has(it.status) ? h("button", { type: "button", class: "btn btn-small", id: "item-reassign", onclick: () => reassign(it) }, "Reassign…") : null }),
        h("div", { class: "stack" },
          card("Claim", leaseBlock(view)),
          card("Progress", progressBlock(it)))),
      card("Transfer history", transfersTable(view.transfers)),
      card("Events", history.events.length ? h("div", { class: "table-scroll" }, eventTable([...history.events].reverse().map(eventRow))) : empty("No events.")),
    );
    sizeBars(body);
  }

  const soon = throttle(() => alive && load(), 700);
  const off = onFeedEvent((e) => {
    if (e.key === key || e.data?.item === id) soon();
  });
  load();
  const timers = [setInterval(() => tickCountdowns(body), 1000), setInterval(load, 10_000)];
  return {
    unmount() {
      alive = false;
      off();
      timers.forEach(clearInterval);
    },
  };
}
