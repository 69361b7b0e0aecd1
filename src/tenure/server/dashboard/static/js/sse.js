// Server-sent events over fetch(): EventSource cannot send an Authorization header, so the frames
// are read from a ReadableStream and parsed here. After a disconnect the stream resumes with
// `Last-Event-ID`, so no event is lost or repeated.

import { api, authHeaders, networkProblem, params } from "./api.js";

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

export class EventStream {
  // filters: {key, holder, type}; after: start after this event id (null: the server's default).
  constructor({ filters = {}, after = null, onEvent, onState = () => {}, onUnauthorized }) {
    this.filters = filters;
    this.lastId = after;
    this.onEvent = onEvent;
    this.onState = onState;
    this.onUnauthorized = onUnauthorized;
    this.controller = null;
    this.retry = 1000;
    this.idleMs = 60_000; // no byte (not even a keep-alive comment) for this long: reconnect
  }

  start() {
    this.controller = new AbortController();
    this.run(this.controller.signal);
    return this;
  }

  stop() {
    this.controller?.abort();
    this.controller = null;
  }

  async run(signal) {
    let backoff = this.retry;
    let first = true;
    while (!signal.aborted) {
      const headers = authHeaders({ Accept: "text/event-stream" });
      const query = { ...this.filters };
      if (this.lastId !== null && this.lastId !== undefined) {
        if (first) query.after = this.lastId;
        else headers["Last-Event-ID"] = String(this.lastId);
      }
      const attempt = new AbortController();
      const abortAttempt = () => attempt.abort();
      signal.addEventListener("abort", abortAttempt);
      let watchdog = null;
      try {
        const res = await fetch(`/v1/events/stream?${params(query)}`, {
          headers,
          signal: attempt.signal,
          cache: "no-store",
        });
        if (!res.ok) {
          let problem;
          try {
            problem = await res.json();
          } catch {
            problem = { title: `HTTP ${res.status}`, status: res.status };
          }
          this.onState("error", problem);
          if (res.status === 401) {
            this.onUnauthorized?.(problem);
            return;
          }
        } else {
          first = false;
          backoff = this.retry;
          this.onState("live");
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          const kick = () => {
            clearTimeout(watchdog);
            watchdog = setTimeout(abortAttempt, this.idleMs);
          };
          kick();
          await this.read(reader, kick);
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err?.name !== "AbortError") this.onState("error", networkProblem(err));
      } finally {
        clearTimeout(watchdog);
        signal.removeEventListener("abort", abortAttempt);
      }
      if (signal.aborted) return;
      this.onState("reconnecting");
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, 15_000);
    }
  }

  async read(reader, kick) {
    let buf = "";
    let frame = { id: null, event: null, data: [] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      kick();
      buf += value;
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buf);
        if (!m) break;
        if (m[0] === "\r" && m.index === buf.length - 1) break; // maybe \r\n split over chunks
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        frame = this.line(line, frame);
      }
    }
  }

  // One line of the SSE format; returns the frame being built.
  line(line, frame) {
    if (line === "") {
      this.dispatch(frame);
      return { id: null, event: null, data: [] };
    }
    if (line.startsWith(":")) return frame; // keep-alive comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") frame.data.push(value);
    else if (field === "event") frame.event = value;
    else if (field === "id" && !value.includes("\0")) frame.id = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return frame;
  }

  dispatch(frame) {
    if (frame.id !== null && frame.id !== "") {
      const n = Number(frame.id);
      this.lastId = Number.isSafeInteger(n) ? n : frame.id;
    }
    if (frame.data.length === 0) return;
    let event;
    try {
      event = JSON.parse(frame.data.join("\n"));
    } catch {
      return;
    }
    if (event && typeof event === "object") {
      if (event.type === undefined && frame.event) event.type = frame.event;
      this.onEvent(event);
    }
  }
}

// The id of the newest event (0 when there is none) matching no filter, found with a few
// `GET /v1/events?after=&limit=1` probes: exponential steps, then bisection.
export async function latestEventId(signal) {
  const firstAfter = async (x) => {
    const r = await api("/v1/events", { query: { after: x, limit: 1 }, signal });
    return r.events.length ? r.events[0].id : null;
  };
  let lo = await firstAfter(0);
  if (lo === null) return 0;
  let step = 256;
  let hi;
  for (;;) {
    const y = await firstAfter(lo + step);
    if (y === null) {
      hi = lo + step;
      break;
    }
    lo = y;
    step *= 2;
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const y = await firstAfter(mid);
    if (y === null) hi = mid;
    else lo = y;
  }
  return lo;
}

// Up to `n` of the newest events matching `filters`, oldest first, and the cursor to stream from.
export async function recentEvents(filters, n, signal) {
  const head = await latestEventId(signal);
  if (head === 0) return { events: [], next: 0 };
  const filtered = Object.values(filters).some((v) => v);
  let window = filtered ? Math.max(n * 20, 5000) : n;
  let events = [];
  // Widen the window until it holds n matching events or reaches the first event.
  for (;;) {
    const after = Math.max(0, head - window);
    const got = [];
    let cursor = after;
    while (cursor < head) {
      const r = await api("/v1/events", {
        query: { ...filters, after: cursor, limit: 1000 },
        signal,
      });
      got.push(...r.events.filter((e) => e.id <= head));
      if (r.events.length < 1000 || r.next >= head) break;
      cursor = r.next;
    }
    events = got;
    if (events.length >= n || after === 0 || window >= 50_000) break;
    window *= 4;
  }
  return { events: events.slice(-n), next: head };
}
