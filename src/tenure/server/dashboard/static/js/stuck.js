// What is stuck: the items in progress whose claim is not live (the API's word for it:
// lapsed, stalled, revoked, …), from the queues of their assignees (as the Queue view reads
// them), and the items parked after their failed attempts (status parked: counted as
// "parked"). The page never decides the word; it only counts and lists what the API says.

import { api, enc } from "./api.js";

const MAX_PEOPLE = 40;
// The words that mean nothing is wrong: a live claim, or none yet.
const FINE = new Set(["live", "none"]);

export async function stuckClaims() {
  const [progress, parked] = await Promise.all([
    api("/v1/items", { query: { status: "in_progress", limit: 200 } }),
    api("/v1/items", { query: { status: "parked", limit: 200 } }),
  ]);
  const assignees = [...new Set(progress.items.map((i) => i.assignee).filter(Boolean))].sort().slice(0, MAX_PEOPLE);
  const queues = await Promise.all(assignees.map((a) => api(`/v1/queue/${enc(a)}`).then((q) => q.items, () => [])));
  const seen = new Map();
  for (const v of queues.flat()) {
    if (!FINE.has(v.lease_state) && !seen.has(v.item.id)) seen.set(v.item.id, v);
  }
  for (const item of parked.items) seen.set(item.id, { item, lease_state: "parked", state: { word: "parked" } });
  return [...seen.values()].sort((a, b) => a.item.priority - b.item.priority || a.item.updated_at - b.item.updated_at);
}

// {word: count} in the order words first appear.
export function countByState(views) {
  const counts = new Map();
  for (const v of views) counts.set(v.lease_state, (counts.get(v.lease_state) ?? 0) + 1);
  return counts;
}
