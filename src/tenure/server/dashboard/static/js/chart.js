// The endings-over-time chart: stacked bars per bucket, drawn as inline SVG (no library).

import { fmtClock, fmtInt, h, s } from "./dom.js";

export const SERIES = [
  { key: "released", label: "Released", cls: "released" },
  { key: "completed", label: "Completed", cls: "completed" },
  { key: "expired", label: "Expired", cls: "expired" },
  { key: "forced", label: "Force-released / taken over", cls: "forced" },
];

function value(bucket, key) {
  if (key === "forced") return (bucket.force_released || 0) + (bucket.taken_over || 0);
  return bucket[key] || 0;
}

// Integer ticks: the smallest step of 1, 2 or 5 × 10^k that covers `max` in at most 4 steps.
function ticks(max) {
  let step = 1;
  for (let mag = 1; ; mag *= 10) {
    const found = [1, 2, 5].map((m) => m * mag).find((s) => s * 4 >= max);
    if (found) {
      step = found;
      break;
    }
  }
  const top = Math.max(step, Math.ceil(max / step) * step);
  const values = [];
  for (let v = 0; v <= top; v += step) values.push(v);
  return { top, values };
}

export function endingsChart(timeline) {
  const W = 720;
  const H = 220;
  const pad = { l: 40, r: 8, t: 10, b: 24 };
  const buckets = timeline.buckets || [];
  const n = Math.max(buckets.length, 1);
  const scale = ticks(Math.max(0, ...buckets.map((b) => SERIES.reduce((t, x) => t + value(b, x.key), 0))));
  const max = scale.top;
  const iw = W - pad.l - pad.r;
  const ih = H - pad.t - pad.b;
  const bw = iw / n;
  const y = (v) => pad.t + ih - (v / max) * ih;

  const grid = [];
  for (const v of scale.values) {
    grid.push(
      s("line", { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), class: "grid" }),
      s("text", { x: pad.l - 6, y: y(v) + 4, class: "axis", "text-anchor": "end" }, fmtInt(v)),
    );
  }

  const bars = [];
  buckets.forEach((b, i) => {
    let acc = 0;
    const x = pad.l + i * bw + Math.min(1, bw * 0.15);
    const w = Math.max(1, bw - Math.min(2, bw * 0.3));
    const parts = [];
    for (const ser of SERIES) {
      const v = value(b, ser.key);
      if (!v) continue;
      parts.push(
        s("rect", { x, y: y(acc + v), width: w, height: Math.max(0.5, y(acc) - y(acc + v)), class: `bar bar-${ser.cls}` }),
      );
      acc += v;
    }
    const tip = SERIES.map((ser) => `${ser.label}: ${value(b, ser.key)}`).join("\n");
    // A transparent full-height hit area carries the tooltip.
    bars.push(
      s("g", { class: "bucket" },
        s("title", {}, `${fmtClock(b.start)}–${fmtClock(b.start + timeline.bucket_ms)}\n${tip}`),
        s("rect", { x: pad.l + i * bw, y: pad.t, width: bw, height: ih, class: "hit" }),
        parts),
    );
  });

  const labels = [];
  const every = Math.max(1, Math.ceil(n / 6));
  for (let i = 0; i < buckets.length; i += every) {
    labels.push(
      s("text", { x: pad.l + i * bw + bw / 2, y: H - 6, class: "axis", "text-anchor": "middle" }, fmtClock(buckets[i].start)),
    );
  }

  const totals = Object.fromEntries(SERIES.map((ser) => [ser.key, buckets.reduce((t, b) => t + value(b, ser.key), 0)]));
  const svg = s(
    "svg",
    { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": "Lease endings over time" },
    grid,
    s("line", { x1: pad.l, x2: W - pad.r, y1: y(0), y2: y(0), class: "baseline" }),
    bars,
    labels,
  );
  const legend = h(
    "ul",
    { class: "legend" },
    SERIES.map((ser) =>
      h("li", { class: `legend-${ser.cls}` }, h("span", { class: "swatch" }), ser.label, " ", h("strong", {}, fmtInt(totals[ser.key]))),
    ),
  );
  return h("div", { class: "chart-wrap" }, svg, legend);
}
