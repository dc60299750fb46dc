/*
 * dashboard_draw.js: the dashboard's two drawings, in SVG (included into
 * dashboard.html at build time after dashboard.js, whose state they read).
 *
 * The "recent log: acked by" strip: a column per recent record, a row per
 * node, which segments hold each and which missed it, the ack count
 * against the write quorum, commits, and the VDL and VCL lines. The
 * timeline: the VDL and every segment's SCL over two minutes on an LSN
 * axis that breaks at jumps (a recovery's LAL), a lane per node, the
 * engine and the coordinator with the periods each was out, and a
 * labelled mark for every fault command.
 */

/* ---- the recent log: a record per column, a node per row ------------------- */

function el(parent, name, attrs, text) {
  const e = document.createElementNS(SVGNS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}

function drawAcked(st) {
  const svg = $("acked");
  const W = svg.clientWidth || 800, H = svg.clientHeight || 150;
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const nodes = st.nodes.slice().sort((a, b) => (a.az + a.id).localeCompare(b.az + b.id));
  const L = 44, T = 30, rowH = 13, colW = 30;
  const tail = st.log_tail || [];
  if (!tail.length) {
    el(svg, "text", { x: 8, y: 20 }, st.engine.addr ? "no records from this writer yet: run some SQL"
                                                      : "no writer has reported");
    return;
  }
  /* Room for "older" and the side; one record of the tail kept back, so
   * the first column's predecessor in its PG is known. */
  const ncol = Math.max(1, Math.min(tail.length - (tail.length > 1), Math.floor((W - L - 44 - 150) / colW)));
  const recs = tail.slice(-ncol);
  const segsOf = {}, sclOf = {};
  for (const pg of st.pgs) {
    segsOf[pg.pg] = new Set(pg.segments.map((s) => s.node));
    for (const s of pg.segments) sclOf[pg.pg + "/" + s.node] = s.scl;
  }
  const rowsB = T + nodes.length * rowH;
  /* A segment whose SCL stops short of its PG's record before the first
   * shown (the tail says which that is) misses something older while it
   * holds later ones: a hole, marked red in the "older" column. */
  const firstOf = {}, prevOf = {};
  for (const r of recs) if (firstOf[r.pg] === undefined) firstOf[r.pg] = r.lsn;
  for (const r of tail) if (firstOf[r.pg] !== undefined && r.lsn < firstOf[r.pg]) prevOf[r.pg] = r.lsn;
  const older = {};
  for (const pg of st.pgs)
    for (const s of pg.segments)
      if (prevOf[pg.pg] !== undefined && s.scl && s.scl < prevOf[pg.pg] &&
          recs.some((r) => r.pg === pg.pg && r.acked_by.includes(s.node)))
        older[s.node] = Math.min(older[s.node] || Infinity, s.scl);
  const holesBefore = Object.keys(older).length > 0;
  nodes.forEach((n, r) => {
    el(svg, "text", { x: L - 8, y: T + r * rowH + 11, "text-anchor": "end",
      style: "fill:" + nodeColor(n.id, r) }, n.id);
  });
  el(svg, "text", { x: L - 8, y: rowsB + 13, "text-anchor": "end" }, "acks");
  const manyPgs = new Set(recs.map((r) => r.pg)).size > 1;
  if (manyPgs) el(svg, "text", { x: L - 8, y: rowsB + 25, "text-anchor": "end", style: "font-size:10px" }, "pg");
  el(svg, "text", { x: L - 8, y: 11, "text-anchor": "end" }, "LSN");
  let prev = null;
  const X0 = holesBefore ? L + 44 : L;
  if (holesBefore) {
    el(svg, "text", { x: L + 18, y: 11, "text-anchor": "middle", style: "font-size:10px" }, "older");
    nodes.forEach((n, r) => {
      if (older[n.id] === undefined) return;
      const y = T + r * rowH;
      const c = el(svg, "g", { class: "ack-hole", "data-node": n.id, "data-scl": older[n.id] });
      el(c, "rect", { x: L + 2, y: y + 2, width: 34, height: rowH - 4, rx: 2, fill: "rgba(239,68,68,.25)",
        stroke: "var(--miss)", "stroke-width": 1.5 });
      el(c, "text", { x: L + 19, y: y + 10, "text-anchor": "middle", style: "font-size:9px;fill:#fecaca" }, "hole");
      el(c, "title", {}, n.id + ": SCL " + older[n.id] + ", below the first record shown: it misses records " +
        "its peers hold (a hole gossip fills, or it was down) and holds later ones");
    });
  }
  recs.forEach((rec, c) => {
    const x = X0 + c * colW;
    const g = el(svg, "g", { class: "ack-col", "data-lsn": rec.lsn, "data-acks": rec.acks, "data-pg": rec.pg });
    const state = rec.lsn <= st.vdl ? "durable" : rec.lsn <= st.vcl ? "complete" : "pending";
    el(g, "rect", { x: x + 1, y: T - 14, width: colW - 2, height: rowsB - T + 30, rx: 3,
      fill: state === "durable" ? "rgba(52,211,153,.10)" : state === "complete" ? "rgba(250,204,21,.10)" : "rgba(248,113,113,.08)" });
    /* The LSN, short (its last digits; the caption gives the whole). */
    el(g, "text", { x: x + colW / 2, y: 11, "text-anchor": "middle", class: "num",
      style: "font-size:10px" }, String(rec.lsn % 1000).padStart(3, "0"));
    if (rec.cpl) el(g, "circle", { cx: x + colW / 2, cy: T - 8, r: 3, fill: "var(--vdl)" });
    el(g, "title", {}, "LSN " + rec.lsn + " (pg " + rec.pg + (rec.cpl ? ", a commit: its MTR's CPL" : "") +
      "): acked by " + (rec.acked_by.join(" ") || "none") + ", " + rec.acks + " of 6; " + state);
    nodes.forEach((n, r) => {
      const y = T + r * rowH;
      const has = segsOf[rec.pg] && segsOf[rec.pg].has(n.id);
      const acked = rec.acked_by.includes(n.id);
      /* Not acknowledged to the writer, but the segment's SCL (from its
       * node's heartbeat) passed it since: gossip filled it. */
      const filled = !acked && has && (sclOf[rec.pg + "/" + n.id] || 0) >= rec.lsn;
      const cell = { class: "ack-cell", "data-node": n.id,
        "data-state": !has ? "none" : acked ? "acked" : filled ? "filled" : "missing",
        x: x + 5, y: y + 2, width: colW - 10, height: rowH - 4, rx: 2 };
      if (!has) { cell.fill = "none"; cell.stroke = "#222b40"; }
      else if (acked) cell.fill = nodeColor(n.id, r);
      else if (filled) { cell.fill = nodeColor(n.id, r); cell["fill-opacity"] = 0.45; cell.stroke = "var(--miss)";
        cell["stroke-dasharray"] = "2 2"; }
      else { cell.fill = "rgba(239,68,68,.25)"; cell.stroke = "var(--miss)"; cell["stroke-width"] = 1.5; }
      el(el(g, "rect", cell), "title", {}, n.id + (!has ? " holds no segment of pg " + rec.pg :
        acked ? " acknowledged it" : filled ? " missed it, then got it from its peers (gossip)" :
        " missed it: its SCL is below it"));
    });
    el(g, "text", { x: x + colW / 2, y: rowsB + 13, "text-anchor": "middle", class: "num",
      style: "font-size:11px;font-weight:700;fill:" + (rec.acks >= 4 ? "var(--up)" : "var(--miss)") }, rec.acks);
    /* Whose log: the PG, when the strip holds more than one. */
    if (manyPgs)
      el(g, "text", { x: x + colW / 2, y: rowsB + 25, "text-anchor": "middle", class: "num",
        style: "font-size:9.5px;fill:var(--faint)" }, rec.pg);
    /* A jump in LSNs between two columns (another PG's records, or a
     * recovery's truncation): a gap mark. */
    if (prev && rec.lsn > prev.lsn + 1)
      el(svg, "text", { x: x, y: rowsB + 26, "text-anchor": "middle", style: "fill:#7dd3fc;font-size:10px" },
        rec.lsn - prev.lsn > 1000 ? "⋯" : "");
    prev = rec;
  });
  /* The VDL and VCL between the columns they fall between. */
  const edge = (lsn) => { let c = 0; while (c < recs.length && recs[c].lsn <= lsn) c++; return X0 + c * colW; };
  const xEnd = X0 + recs.length * colW;
  /* The lines sit between columns; their names and values go beside the
   * strip, with the LSNs it covers. */
  const side = xEnd + 10;
  const flag = (lsn, name, color, y) => {
    const x = edge(lsn);
    el(svg, "line", { x1: x, x2: x, y1: T - 16, y2: rowsB + 16, stroke: color, "stroke-width": 2,
      class: name.toLowerCase() + "-mark" });
    if (x >= xEnd)             /* in the middle its name would cover the ack counts */
      el(svg, "text", { x: x + 3, y: rowsB + 16, style: "font-size:10px;font-weight:700;fill:" + color }, name);
    el(svg, "text", { x: side, y, class: "num", style: "font-weight:600;fill:" + color }, name + " " + lsn);
  };
  el(svg, "text", { x: side, y: T + 4 }, "LSNs " + recs[0].lsn);
  el(svg, "text", { x: side, y: T + 18 }, "to " + recs[recs.length - 1].lsn);
  flag(st.vdl, "VDL", "var(--vdl)", T + 40);
  if (st.vcl !== st.vdl) flag(st.vcl, "VCL", "var(--vcl)", T + 54);
  el(svg, "text", { x: side, y: T + 66, style: "font-size:10px" }, "● a commit (CPL)");
  el(svg, "text", { x: side, y: T + 78, style: "font-size:10px" }, "green: durable, ≤ VDL");
}

/* ---- the timeline ------------------------------------------------------------ */

/* A round step for about n grid lines over [lo, hi]: 1, 2 or 5 times a
 * power of ten. */
function gridStep(lo, hi, n) {
  const raw = Math.max((hi - lo) / Math.max(n, 1), 1e-9), p = Math.pow(10, Math.floor(Math.log10(raw)));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
}

/* Stretches of time where key(sample) is not "up": [{from, to, kind}]. */
function periods(key, now) {
  const out = [];
  let cur = null;
  samples.forEach((s, i) => {
    const kind = key(s);
    const end = i + 1 < samples.length ? samples[i + 1].t : now;
    if (kind && kind !== "up") {
      if (cur && cur.kind === kind && cur.to === s.t) cur.to = end;
      else out.push(cur = { from: s.t, to: end, kind });
    } else cur = null;
  });
  return out;
}

/* The LSN axis's breaks: gaps between the values drawn that dwarf the
 * rest (a recovery's jump of LAL, 10,000,000, beside a few hundred LSNs
 * of work). The biggest k gaps break when each is at least 1000 and 8
 * times what is left of the span without them; at most 3. */
function axisBreaks(vals) {
  const gaps = [];
  for (let i = 1; i < vals.length; i++) gaps.push({ from: vals[i - 1], to: vals[i], size: vals[i] - vals[i - 1] });
  const big = gaps.filter((g) => g.size >= 1000).sort((a, b) => b.size - a.size).slice(0, 3);
  const span = vals.length ? vals[vals.length - 1] - vals[0] : 0;
  for (let k = big.length; k > 0; k--) {
    const rest = span - big.slice(0, k).reduce((a, g) => a + g.size, 0);
    if (big[k - 1].size > 8 * Math.max(rest, 20)) return big.slice(0, k).sort((a, b) => a.from - b.from);
  }
  return [];
}

/* An LSN axis over vals from plot bottom yB up to yT, in stretches
 * separated by breaks of BREAK_PX each: {Y, stretches, breaks}. */
const BREAK_PX = 15;
function lsnAxis(vals, yT, yB) {
  vals = [...new Set(vals)].sort((a, b) => a - b);
  if (!vals.length) vals = [0, 10];
  const breaks = axisBreaks(vals);
  const st = [];
  let a = vals[0];
  for (const b of breaks) { st.push({ lo: a, hi: b.from }); a = b.to; }
  st.push({ lo: a, hi: vals[vals.length - 1] });
  const total = st.reduce((s, x) => s + (x.hi - x.lo), 0);
  for (const x of st) {
    const span = x.hi - x.lo, pad = Math.max(span * 0.06, 2);
    if (span < 10) { const m = (x.lo + x.hi) / 2; x.lo = m - 5; x.hi = m + 5; }
    else { x.lo -= pad; x.hi += pad; }
    x.lo = Math.max(0, x.lo);
    x.w = Math.max(x.hi - x.lo, total * 0.12, 1);
  }
  const avail = yB - yT - breaks.length * BREAK_PX;
  const wsum = st.reduce((s, x) => s + x.w, 0);
  let y = yB;
  for (const x of st) { x.yB = y; x.yT = y - avail * x.w / wsum; y = x.yT - BREAK_PX; }
  const Y = (v) => {
    for (let i = 0; i < st.length; i++) {
      const x = st[i];
      if (v <= x.hi || i === st.length - 1) {
        if (v < x.lo && i > 0) {       /* inside the break below this stretch */
          const p = st[i - 1], f = (v - p.hi) / Math.max(x.lo - p.hi, 1);
          return p.yT - f * BREAK_PX;
        }
        return x.yB - (Math.max(v, x.lo) - x.lo) / (x.hi - x.lo) * (x.yB - x.yT);
      }
    }
    return yT;
  };
  return { Y, stretches: st, breaks };
}

/* A step line through the samples that have key; breaks where none. */
function stepPath(get, X, Y, now) {
  let d = "", prev = null;
  samples.forEach((s, i) => {
    const v = s.ok ? get(s) : undefined;
    if (v === undefined) { prev = null; return; }
    const x = X(s.t), y = Y(v);
    d += prev === null ? "M" + x.toFixed(1) + "," + y.toFixed(1) : "H" + x.toFixed(1) + "V" + y.toFixed(1);
    prev = y;
    if (i === samples.length - 1) d += "H" + X(now).toFixed(1);
  });
  return d;
}

/* A text's width in the timeline's font (a canvas measures it). */
const measure = (() => {
  const c = document.createElement("canvas").getContext("2d");
  return (text, px) => { c.font = "600 " + px + "px DejaVu Sans, Helvetica, Arial, sans-serif"; return c.measureText(text).width; };
})();

/* The marks' shapes at (x, top of a lane): see faultShape. */
const MARK_SHAPES = {
  down: (x, y) => "M" + (x - 4.5) + "," + y + "h9l-4.5,7z",
  drop: (x, y) => "M" + x + "," + y + "l4,4l-4,4l-4,-4z",
  set: (x, y) => "M" + (x - 3.5) + "," + y + "h7v7h-7z",
  mend: (x, y) => "M" + (x - 4.5) + "," + (y + 7) + "h9l-4.5,-7z",
};

function drawTimeline() {
  const svg = $("timeline");
  const W = svg.clientWidth || 1200, H = svg.clientHeight || 360;
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const now = Date.now(), t0 = now - WINDOW_MS;

  const nodeList = last ? last.nodes : [];
  const nodeIds = nodeList.map((n) => n.id);
  const lanes = ["coord", "engine"].concat(nodeIds);
  const laneH = 13, L = 74, R = 96, T = 16, MARK_ROWS = 4, markH = 12;
  const lanesTop = H - 20 - lanes.length * laneH;
  const marksTop = lanesTop - MARK_ROWS * markH - 4;
  const plotB = marksTop - 8;
  const X = (t) => L + (t - t0) / WINDOW_MS * (W - L - R);

  /* The LSN axis, with a break at each jump (see axisBreaks). */
  const vis = samples.filter((s) => s.ok && s.t >= t0 - POLL_MS);
  const vals = [];
  for (const s of vis)
    for (const v of [s.vdl, s.vcl].concat(Object.values(s.scl))) if (v !== undefined) vals.push(v);
  const ax = lsnAxis(vals, T + 6, plotB);
  const Y = ax.Y;

  /* Each break: a band across the plot, zigzags on the axis, and what it
   * skips (a recovery's truncation when one lies in it). */
  const truncs = last ? last.truncations : [];
  const taken = [];            /* boxes of the plot's labels so far */
  for (let i = 0; i < ax.breaks.length; i++) {
    const b = ax.breaks[i], lo = ax.stretches[i], hi = ax.stretches[i + 1];
    const y1 = lo.yT, y2 = hi.yB;
    el(svg, "rect", { x: L, y: y2, width: W - L - R, height: y1 - y2, fill: "#0d1220", class: "axis-break",
      "data-from": b.from, "data-to": b.to });
    for (const y of [y1, y2])
      el(svg, "line", { x1: L, x2: W - R, y1: y, y2: y, stroke: "#7dd3fc", "stroke-opacity": 0.45, "stroke-dasharray": "6 4" });
    const zz = (x) => "M" + (x - 5) + "," + (y1 - 2) + "l5,-4l-5,-4l5,-4l-5,-4";
    el(svg, "path", { d: zz(L), stroke: "#7dd3fc", fill: "none", "stroke-width": 1.5 });
    const t = truncs.filter((x) => x.to > b.from && x.from < b.to).pop();
    const words = "axis break: " + (b.to - b.from) + " LSNs skipped" + (t ? ", epoch " + t.epoch +
      "'s recovery truncated (" + t.from + ", " + t.to + "] and writes above it" : " (no value in between)");
    el(svg, "text", { x: L + 8, y: (y1 + y2) / 2 + 3.5, class: "break-label" }, words);
    taken.push({ x1: L + 8, x2: L + 8 + measure(words, 10), y1: (y1 + y2) / 2 - 6, y2: (y1 + y2) / 2 + 5 });
  }
  /* Grid: round LSNs within each stretch (after the breaks' bands, so a
   * value at a stretch's edge is not covered). */
  for (const x of ax.stretches) {
    const step = gridStep(x.lo, x.hi, Math.max(1, Math.round((x.yB - x.yT) / 36)));
    let lastY = Infinity;
    const label = (v) => {
      const y = Y(v);
      if (lastY - y < 14 || y < T + 12) return;   /* (T: the axis's "LSN") */
      lastY = y;
      el(svg, "line", { class: "grid", x1: L, x2: W - R, y1: y, y2: y });
      el(svg, "text", { x: L - 8, y: y + 4, "text-anchor": "end", class: "num" }, v);
    };
    for (let v = Math.ceil(x.lo / step) * step; v <= x.hi; v += step) label(v);
    /* A stretch too short for a round value still says where it is. */
    if (lastY === Infinity) label(Math.round((x.lo + x.hi) / 2));
  }
  el(svg, "text", { x: L - 8, y: T, "text-anchor": "end" }, "LSN");
  for (let s = 0; s <= WINDOW_MS / 1000; s += 20) {
    const x = X(now - s * 1000);
    el(svg, "line", { class: "grid", x1: x, x2: x, y1: T, y2: H - 16 });
    el(svg, "text", { x, y: H - 3, "text-anchor": "middle" }, s ? "-" + s + " s" : "now");
  }

  /* States: a lane each for the coordinator, the engine and every node;
   * a full band while it is down, partitioned or slow, a thin one below
   * while it serves stale pages or gossips not; the plot shaded while a
   * node is down or partitioned. */
  const bands = svg.appendChild(document.createElementNS(SVGNS, "g"));
  const laneY = {};
  lanes.forEach((id, k) => {
    const y = lanesTop + k * laneH;
    laneY[id] = y;
    el(svg, "rect", { class: "lane-bg", x: L, y: y + 1, width: W - L - R, height: laneH - 2, rx: 2 });
    el(svg, "text", { class: "lane-label", x: L - 8, y: y + laneH - 3, "text-anchor": "end" }, id);
    const key = id === "coord" ? (s) => (s.ok ? "up" : "unreachable")
              : id === "engine" ? (s) => (s.ok ? (s.engine === "up" || s.engine === "recovering"
                                                   ? s.engine : "down") : null)
              : (s) => (s.ok && s.nodes[id] ? s.nodes[id] : null);
    const band = (p, y0, h, thin) => {
      const x1 = X(Math.max(p.from, t0)), x2 = Math.max(x1 + 2, X(p.to));
      const r = el(svg, "rect", { class: "fault-band", "data-node": id, "data-kind": p.kind,
        x: x1, y: y0, width: x2 - x1, height: h, rx: thin ? 1 : 2, fill: FAULT_COLORS[p.kind] });
      el(r, "title", {}, id + " " + p.kind + " for " + Math.round((p.to - p.from) / 1000) + " s");
      const word = (id === "engine" ? "writer " : "") + p.kind.replace("-", " ");
      if (!thin && x2 - x1 > measure(word, 10) + 6)
        el(svg, "text", { class: "band-label", x: x1 + 3, y: y0 + h - 3 }, word);
      return [x1, x2];
    };
    for (const p of periods(key, now)) {
      if (p.to < t0) continue;
      const [x1, x2] = band(p, y + 1, laneH - 2, false);
      if (p.kind === "down" || p.kind === "partitioned")
        el(bands, "rect", { x: x1, y: T, width: x2 - x1, height: plotB - T, fill: FAULT_COLORS[p.kind], opacity: 0.07 });
    }
    if (!nodeIds.includes(id)) return;
    ["stale", "gossip-off"].forEach((flag, j) => {
      const fk = (s) => (s.ok && s.nodes[id] && (s.flags || {})[id] && s.flags[id].split(" ").includes(flag) ? flag : null);
      for (const p of periods(fk, now)) if (p.to >= t0) band(p, y + laneH - 4 - j * 4, 3, true);
    });
  });

  /* Every fault command: a mark in the lanes it hit and a label above
   * them. Labels are placed newest first, each in the row where it lands
   * nearest its mark without touching another (a leader line joins a
   * label to its mark), so a burst of faults stays readable. */
  const rowStart = new Array(MARK_ROWS).fill(W - 2);
  const marks = [...faultsSeen.values()].filter((x) => x.t >= t0).sort((a, b) => b.t - a.t);
  for (const m of marks) {
    const x = X(m.t), color = (FAULT_KINDS[m.kind] || ["#e5e7eb"])[0];
    const g = el(svg, "g", { class: "fault-mark", "data-kind": m.kind });
    el(g, "title", {}, m.label + ", " + ago(now - m.t));
    const hit = faultLanes(m.f, nodeList);
    for (const id of hit) {
      const y = laneY[id];
      if (y === undefined) continue;
      el(g, "path", { d: MARK_SHAPES[faultShape(m.kind)](x, y + 1), fill: color, stroke: "#0d1220", "stroke-width": 0.8 });
      el(g, "line", { x1: x, x2: x, y1: y + 1, y2: y + laneH - 1, stroke: color, "stroke-width": 2 });
    }
    const w = measure(m.label, 10.5) + 8;
    let best = 0, bestLx = 0, bestD = Infinity;
    rowStart.forEach((end, r) => {
      const lx = Math.max(4, Math.min(x - w / 2, end - w));
      const d = Math.abs(lx + w / 2 - x) + (lx + w > end ? 1e6 : 0) + r;
      if (d < bestD) { bestD = d; best = r; bestLx = lx; }
    });
    rowStart[best] = bestLx;
    const ly = marksTop + best * markH + 10;
    const cx = Math.min(Math.max(x, bestLx + 2), bestLx + w - 6);
    const topLane = Math.min(...hit.map((id) => laneY[id]).filter((v) => v !== undefined), lanesTop);
    el(g, "path", { d: "M" + cx + "," + (ly + 2) + "L" + x + "," + (marksTop + MARK_ROWS * markH) + "V" + (topLane + 1),
      stroke: color, "stroke-opacity": 0.55, fill: "none", "stroke-dasharray": "2 2" });
    el(g, "text", { class: "mark-label", x: bestLx + 1, y: ly, style: "fill:" + color }, m.label);
  }

  /* A new epoch is a recovery: mark it, its label at the lowest height
   * in the plot where it covers no other label (a break's, an earlier
   * recovery's). */
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    if (!a.ok || !b.ok || b.t < t0 || a.epoch === b.epoch) continue;
    const x = X(b.t), words = "epoch " + b.epoch + (b.ntruncs > a.ntruncs ? " (truncated)" : "");
    const w = measure(words, 11);
    el(svg, "line", { x1: x, x2: x, y1: T, y2: plotB, stroke: "#7dd3fc", "stroke-dasharray": "4 4" });
    let y = plotB - 6;
    const hits = (yy) => taken.some((r) => x + 4 < r.x2 && r.x1 < x + 4 + w && yy - 10 < r.y2 && r.y1 < yy + 2);
    while (hits(y) && y > T + 12) y -= 6;
    taken.push({ x1: x + 4, x2: x + 4 + w, y1: y - 10, y2: y + 2 });
    el(svg, "text", { x: x + 4, y, style: "fill:#7dd3fc", class: "epoch-mark" }, words);
  }

  /* The lines: the VDL wide underneath, each segment's SCL thin on top, so
   * a segment that falls behind leaves the VDL visibly. */
  const clip = el(el(svg, "defs", {}), "clipPath", { id: "plotclip" });
  el(clip, "rect", { x: L, y: T - 4, width: W - L - R + 2, height: plotB - T + 8 });
  const g = el(svg, "g", { "clip-path": "url(#plotclip)" });
  el(g, "path", { d: stepPath((s) => s.vdl, X, Y, now), fill: "none", stroke: "var(--vdl)",
    "stroke-width": 5, "stroke-opacity": 0.35, "stroke-linejoin": "round", id: "vdl-line" });
  el(g, "path", { d: stepPath((s) => s.vcl, X, Y, now), fill: "none", stroke: "var(--vcl)",
    "stroke-width": 1, "stroke-dasharray": "2 3" });
  const segKeys = last ? last.pgs.flatMap((pg) => pg.segments.map((s) => s.node + "/" + pg.pg)) : [];
  for (const k of segKeys) {
    const nodeId = k.split("/")[0];
    el(g, "path", { d: stepPath((s) => s.scl[k], X, Y, now), fill: "none", class: "scl-line",
      "data-seg": k, stroke: nodeColor(nodeId, nodeIds.indexOf(nodeId)), "stroke-width": 1.6,
      "stroke-opacity": 0.9 });
  }

  /* The current VDL, at the right edge. */
  const cur = [...samples].reverse().find((s) => s.ok && s.vdl !== undefined);
  if (cur) {
    const y = Y(cur.vdl);
    el(svg, "circle", { cx: X(now), cy: y, r: 4, fill: "var(--vdl)" });
    el(svg, "text", { x: X(now) + 8, y: y + 4, fill: "var(--vdl)", class: "num",
      style: "fill: var(--vdl); font-weight: 600" }, "VDL " + cur.vdl);
  }
}

function drawLegend() {
  let html = '<span><i style="background:var(--vdl);opacity:.6;height:5px"></i>VDL</span>' +
             '<span><i style="background:repeating-linear-gradient(90deg,var(--vcl) 0 2px,transparent 2px 5px)"></i>VCL</span>';
  if (last) last.nodes.forEach((n, i) => {
    html += '<span><i style="background:' + nodeColor(n.id, i) + '"></i>SCL ' + esc(n.id) + "</span>";
  });
  html += '<span class="sep">|</span>';
  for (const k of ["down", "recovering", "partitioned", "slow", "stale", "gossip-off", "unreachable",
                   "draining"])
    html += '<span><i class="box" style="background:' + FAULT_COLORS[k] + (k === "stale" || k === "gossip-off" ? ";height:4px" : "") +
            '"></i>' + k.replace("-", " ") + "</span>";
  html += '<span class="sep">|</span><span>fault commands: ▼ a stop or crash · ◆ drop · ■ slow, stale, ' +
          'gossip off, partition · <span style="color:#34d399">▲ the way back</span></span>';
  $("legend").innerHTML = html;
}
