// The dashboard's entry point: sign-in, the header, the router and the app-wide event feed.

import { ApiError, api, onUnauthorized, session } from "./api.js";
import { badge, clear, h, showProblem } from "./dom.js";
import { onFeedState, startFeed, stopFeed } from "./feed.js";
import { events } from "./views/events.js";
import { item } from "./views/item.js";
import { leases } from "./views/leases.js";
import { overview } from "./views/overview.js";
import { queue } from "./views/queue.js";

const $ = (id) => document.getElementById(id);
const VIEWS = { overview, leases, queue, events, item };
const PATHS = { "": "overview", "/": "overview", "/leases": "leases", "/queue": "queue", "/events": "events" };

let current = null;
let clockTimer = null;

function parseRoute() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const m = /^\/items\/(.+)$/.exec(path);
  if (m) return { name: "item", arg: decodeURIComponent(m[1]), query: new URLSearchParams(query) };
  return { name: PATHS[path] ?? "overview", arg: null, query: new URLSearchParams(query) };
}

function route() {
  if (location.hash.startsWith("#signin=")) {
    leave();
    signInByLink();
    return;
  }
  if (!session.me) return;
  current?.unmount?.();
  current = null;
  const { name, arg, query } = parseRoute();
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.route === (name === "item" ? "queue" : name));
  }
  const el = clear($("view"));
  el.dataset.view = name;
  current = VIEWS[name](el, arg, query);
  window.scrollTo(0, 0);
}

function renderWhoami() {
  const me = session.me;
  clear(
    $("whoami"),
    h("span", { class: "whoami-name", id: "whoami-name" }, me.name),
    h("span", { class: "whoami-kind" }, me.kind),
    me.roles.map((r) => badge(r, `role-${r}`)),
  );
}

// The server's clock (`now` of /v1/stats) for the countdowns; the Date header until then.
async function syncClock() {
  try {
    await api("/v1/stats");
  } catch {
    // stats unavailable: the countdowns use the Date header's sample
  }
}

function enter() {
  $("signin").hidden = true;
  $("shell").hidden = false;
  renderWhoami();
  startFeed(expired);
  syncClock();
  clockTimer = setInterval(syncClock, 60_000);
  route();
}

function leave() {
  current?.unmount?.();
  current = null;
  clearInterval(clockTimer);
  stopFeed();
  session.clear();
  clear($("view"));
  $("shell").hidden = true;
  $("signin").hidden = false;
  $("signin-token").value = "";
  $("signin-token").focus();
}

// Sign out: a token this tab got from a sign-in link is revoked (nobody else has it); a
// pasted one is only forgotten.
function signOut() {
  const linked = session.linked();
  const me = session.me?.name;
  if (linked && me) {
    api(`/v1/principals/${encodeURIComponent(me)}/tokens/${encodeURIComponent(linked)}`, { method: "DELETE" }).catch(() => {});
  }
  leave();
}

function expired(problem) {
  if (!session.token) return;
  leave();
  showProblem($("signin-error"), {
    ...problem,
    title: "Your session ended",
    detail: problem?.detail || "The token is no longer valid; sign in again.",
  });
}

async function signIn(token) {
  const previous = session.token;
  session.token = token;
  try {
    const r = await api("/v1/me");
    session.save(token);
    session.me = r.principal;
    $("signin-error").hidden = true;
    enter();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) session.clear();
    else session.token = previous;
    const problem = err instanceof ApiError ? err.problem : { title: "Sign-in failed", detail: String(err) };
    showProblem($("signin-error"), problem);
    $("shell").hidden = true;
    $("signin").hidden = false;
  }
}

// A one-time sign-in link (`tenure dashboard`): <server>/#signin=CODE. The code leaves the
// address bar (and the history) at once, is traded for a token of the principal who asked for
// it, and works only once: a second use shows why and offers the token form.
async function signInByLink() {
  const code = decodeURIComponent(location.hash.slice("#signin=".length));
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
  try {
    const r = await api("/v1/signin", { method: "POST", body: { code } });
    session.clear();
    await signIn(r.token);
    if (session.token === r.token) session.linked(r.token_id);
  } catch (err) {
    const problem = err instanceof ApiError ? err.problem : { title: "Sign-in failed", detail: String(err) };
    showProblem($("signin-error"), { ...problem, title: "This sign-in link does not work" });
    $("signin").hidden = false;
    $("signin-token").focus();
  }
}

function boot() {
  onUnauthorized(expired);
  onFeedState((state, problem) => {
    const el = $("stream-state");
    el.className = `stream-state stream-${state}`;
    el.textContent = { live: "live", connecting: "connecting", reconnecting: "reconnecting", error: "stream error", idle: "offline" }[state] ?? state;
    el.title = problem ? `${problem.title ?? ""} ${problem.detail ?? ""}`.trim() : "event stream";
  });
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const token = $("signin-token").value.trim();
    if (token) signIn(token);
  });
  $("signout").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  if (location.hash.startsWith("#signin=")) signInByLink();
  else if (session.token) signIn(session.token);
  else {
    $("signin").hidden = false;
    $("signin-token").focus();
  }
}

boot();
