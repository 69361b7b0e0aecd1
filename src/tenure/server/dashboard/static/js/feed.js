// The app-wide event feed: the newest events (backfilled once), then live over SSE. Views
// subscribe to it to show events and to refresh when something changed.

import { session } from "./api.js";
import { EventStream, recentEvents } from "./sse.js";

const MAX = 500;
const listeners = new Set();
const stateListeners = new Set();

export const feed = {
  events: [], // oldest first
  lastId: 0,
  state: "idle",
  problem: null,
};

let stream = null;
let controller = null;

function setState(state, problem = null) {
  feed.state = state;
  feed.problem = problem;
  for (const fn of stateListeners) fn(state, problem);
}

function push(event) {
  if (typeof event.id === "number" && event.id <= feed.lastId) return; // already seen
  if (typeof event.id === "number") feed.lastId = event.id;
  feed.events.push(event);
  if (feed.events.length > MAX) feed.events.splice(0, feed.events.length - MAX);
  for (const fn of listeners) fn(event);
}

export function onFeedEvent(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function onFeedState(fn) {
  stateListeners.add(fn);
  fn(feed.state, feed.problem);
  return () => stateListeners.delete(fn);
}

export async function startFeed(onUnauthorized) {
  stopFeed();
  feed.events = [];
  feed.lastId = 0;
  controller = new AbortController();
  const signal = controller.signal;
  setState("connecting");
  let after = null;
  // The stream starts after `after` (its default, 0, would replay the whole log): find the
  // newest events first, retrying until the server answers.
  for (let delay = 1000; after === null; delay = Math.min(delay * 2, 15_000)) {
    try {
      const recent = await recentEvents({}, 100, signal);
      for (const e of recent.events) push(e);
      after = Math.max(recent.next, feed.lastId);
    } catch (err) {
      if (signal.aborted) return;
      setState("error", err?.problem ?? null);
      if (err?.status === 401) return;
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (signal.aborted) return;
    }
  }
  if (signal.aborted || !session.token) return;
  stream = new EventStream({
    after,
    onEvent: push,
    onState: setState,
    onUnauthorized,
  }).start();
}

export function stopFeed() {
  controller?.abort();
  controller = null;
  stream?.stop();
  stream = null;
  setState("idle");
}

// Event types after which lease and queue views are stale.
export const CHANGES = new Set([
  "acquired", "released", "expired", "force_released", "taken_over", "extended", "renewed",
  "claimed", "completed", "cancelled", "progress", "dispatched", "reassigned", "stalled",
  "item_created", "item_edited", "item_status",
]);
export const ENDINGS = new Set(["released", "expired", "force_released", "taken_over", "completed"]);
