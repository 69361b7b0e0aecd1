// DOM building (text always through textContent: nothing from the API is parsed as HTML) and
// formatting.

import { clock, problemFields } from "./api.js";

const SVG_NS = "http://www.w3.org/2000/svg";

function addChildren(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "text") el.textContent = v;
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  addChildren(el, children);
  return el;
}

export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  addChildren(el, children);
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  addChildren(el, children);
  return el;
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

export function fmtCountdown(ms) {
  if (ms <= 0) return "expired";
  const secs = Math.ceil(ms / 1000);
  if (secs < 60) return `${secs}s`;
  const mins = Math.floor(secs / 60);
  if (mins < 60) return `${mins}m ${pad(secs % 60)}s`;
  const hours = Math.floor(mins / 60);
  if (hours < 48) return `${hours}h ${pad(mins % 60)}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  if (ms < 172_800_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

export function fmtAgo(at) {
  const d = clock.now() - at;
  if (d < 0) return `in ${fmtCountdown(-d)}`;
  if (d < 5_000) return "just now";
  if (d < 60_000) return `${Math.floor(d / 1000)}s ago`;
  if (d < 3_600_000) return `${Math.floor(d / 60_000)}m ago`;
  if (d < 86_400_000) return `${Math.floor(d / 3_600_000)}h ago`;
  return fmtDateTime(at);
}

export function fmtTime(at) {
  const d = new Date(at);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtClock(at) {
  const d = new Date(at);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fmtDateTime(at) {
  const d = new Date(at);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${fmtTime(at)}`;
}

export function fmtInt(n) {
  if (n === null || n === undefined) return "—";
  return Number(n).toLocaleString("en-US");
}

export function fmtShare(x) {
  if (x === null || x === undefined) return "—";
  return `${(x * 100).toFixed(x < 0.1 && x > 0 ? 1 : 0)}%`;
}

export function badge(text, kind = text) {
  return h("span", { class: `badge badge-${String(kind).replace(/[^a-z_-]/gi, "")}` }, text);
}

export function timeEl(at) {
  return h("time", { datetime: new Date(at).toISOString(), title: fmtDateTime(at) }, fmtAgo(at));
}

// Long text cut in the middle ("files/github.com/a…/src/app.py"): the end of a key (a file's
// name) is what tells keys apart, so the start and the end stay.
export function cutMiddle(text, max = 48) {
  const t = String(text ?? "");
  const chars = [...t];
  if (chars.length <= max) return t;
  const tail = Math.ceil((max - 1) * 0.6);
  return `${chars.slice(0, max - 1 - tail).join("")}…${chars.slice(chars.length - tail).join("")}`;
}

export function itemLink(id, label = id, max = 48) {
  const shown = cutMiddle(label, max);
  return h("a", { href: `#/items/${encodeURIComponent(id)}`, class: "mono", title: shown === label ? null : label }, shown);
}

// A lease key, cut in the middle when long (the whole key in its title: on hover, and focus
// for the links); `items/<id>` links to the item page.
export function keyLink(key, max = 48) {
  if (key && key.startsWith("items/")) return itemLink(key.slice(6), key, max);
  const shown = cutMiddle(key ?? "—", max);
  return h("span", { class: "mono key", title: key ?? null, tabindex: shown === key ? null : "0" }, shown);
}

// A problem+json error, readably: title, detail and the fields that explain it.
export function problemBox(problem, extraClass = "") {
  const p = problem?.problem ?? problem ?? {};
  const fields = problemFields(p);
  return h(
    "div",
    { class: `problem ${extraClass}`, role: "alert" },
    h(
      "div",
      { class: "problem-title" },
      p.title || "Something went wrong",
      p.code ? h("code", { class: "problem-code" }, p.code) : null,
      p.status ? h("span", { class: "problem-status" }, String(p.status)) : null,
    ),
    p.detail ? h("div", { class: "problem-detail" }, p.detail) : null,
    fields.length
      ? h(
          "dl",
          { class: "problem-fields" },
          fields.map(([k, v]) => [
            h("dt", {}, k),
            h("dd", {}, k === "expires_at" ? fmtDateTime(v) : String(v)),
          ]),
        )
      : null,
  );
}

export function showProblem(el, problem) {
  el.hidden = false;
  clear(el, [...problemBox(problem).childNodes]);
}

export function toast(message, kind = "info", problem = null) {
  const box = document.getElementById("toasts");
  const el = h(
    "div",
    { class: `toast toast-${kind}`, role: kind === "error" ? "alert" : "status" },
    h("div", { class: "toast-message" }, message),
    problem ? problemBox(problem, "problem-inline") : null,
  );
  box.append(el);
  setTimeout(() => el.remove(), kind === "error" ? 9000 : 4000);
}

export function card(title, body, { actions = null, cls = "" } = {}) {
  return h(
    "section",
    { class: `card ${cls}` },
    h("header", { class: "card-head" }, h("h2", {}, title), actions),
    body,
  );
}

export function empty(text) {
  return h("div", { class: "empty" }, text);
}

// Calls fn at most once per `wait` ms, trailing: for refreshes triggered by bursts of events.
export function throttle(fn, wait) {
  let timer = null;
  let last = 0;
  return () => {
    if (timer) return;
    const due = Math.max(0, last + wait - Date.now());
    timer = setTimeout(() => {
      timer = null;
      last = Date.now();
      fn();
    }, due);
  };
}
