/*
 * dashboard.js: the dashboard's state and its cards (included into
 * dashboard.html at build time, see there and the Makefile).
 *
 * What the page remembers (the samples of the last two minutes and the
 * faults heard of), how a status object turns into the numbers, the AZs
 * with their nodes and segments, and the Faults card; the page's own
 * layout check; and the polling of /status.json. The drawings (the acked-by
 * strip, the timeline) are dashboard_draw.js's.
 */

const WINDOW_MS = 120000;        /* the timeline shows this much history */
const POLL_MS = 1000;            /* one fetch of /status.json a second */
const KEEP_MS = WINDOW_MS + 10000;
const NODE_COLORS = { A1: "#60a5fa", A2: "#a5c8ff", B1: "#34d399", B2: "#99ecc8",
                      C1: "#a78bfa", C2: "#d3c4ff" };
const SPARE_COLORS = ["#f472b6", "#38bdf8", "#4ade80", "#e879f9", "#2dd4bf", "#818cf8"];
/* What a lane shades while it lasts (a node's or the engine's state). */
const FAULT_COLORS = { down: "#f87171", partitioned: "#fb923c", slow: "#facc15",
                       unreachable: "#64748b", stale: "#c084fc", "gossip-off": "#2dd4bf",
                       draining: "#d6a35c", retired: "#475569", recovering: "#38bdf8" };
/* Every fault command, as `auralog fault` names it (cli/fault.c), with
 * its colour: what breaks in warm colours, what mends in green. */
const FAULT_KINDS = {
  "node-stop": ["#f87171", "node-stop: a node killed"],
  "az-down": ["#dc2626", "az-down: both nodes of an AZ killed"],
  "partition": ["#fb923c", "partition: an AZ cut off"],
  "slow": ["#facc15", "slow: a node answers late"],
  "stale": ["#c084fc", "stale: a node serves pages without their newest record"],
  "drop": ["#f472b6", "drop: a node loses the next N Appends"],
  "gossip-off": ["#2dd4bf", "gossip off: a node neither asks its peers nor answers"],
  "writer-crash": ["#f43f5e", "writer-crash: the writer killed (SIGKILL)"],
  "writer-stop": ["#38bdf8", "writer-stop: the writer frozen (SIGSTOP)"],
  "engine-crash": ["#fda4af", "engine-crash: the writing engine killed"],
  "node-start": ["#34d399"], "az-up": ["#34d399"], "heal": ["#34d399"],
  "gossip-on": ["#34d399"], "stale-off": ["#34d399"], "not-slow": ["#34d399"],
};
const SVGNS = "http://www.w3.org/2000/svg";

const volume = new URLSearchParams(location.search).get("volume") || "main";
const samples = [];              /* {t, ok, vdl, vcl, epoch, commits, engine, nodes, flags, scl, ntruncs} */
const faultsSeen = new Map();    /* "seq action node az" -> {t, kind, label, ...} */
let last = null;                 /* the last status object fetched */

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");

function nodeColor(id, i) {
  return NODE_COLORS[id] || SPARE_COLORS[i % SPARE_COLORS.length];
}

/* Is the node's process answering? ("draining" is up and out of service:
 * its segments move to spares, member.h; "retired" hosts nothing.) */
const isUp = (n) => n.state === "up" || n.state === "draining";

/* A node's state as the page shows it: down beats retired beats
 * partitioned beats slow beats draining. */
function nodeState(n) {
  if (n.state === "retired") return "retired";
  if (!isUp(n)) return "down";
  if (n.partitioned) return "partitioned";
  if (n.slow_ms) return "slow";
  if (n.state === "draining") return "draining";
  return "up";
}

/* The faults a node plays besides its state: "stale", "gossip-off". */
function nodeFlags(n) {
  if (!isUp(n)) return "";
  return [n.stale ? "stale" : "", n.no_gossip ? "gossip-off" : ""].filter(Boolean).join(" ");
}

/* ---- faults: what kind, what label ----------------------------------------- */

/* A mark's shape says what sort of fault it is, besides its colour and
 * label: a process stopped or killed (down), Appends lost (drop), a fault
 * a node plays from now on (set), or the way back (mend). */
function faultShape(kind) {
  if (FAULT_KINDS[kind] && FAULT_KINDS[kind][0] === "#34d399") return "mend";
  if (kind === "drop") return "drop";
  if (/^(node-stop|az-down|writer-crash|writer-stop|engine-crash)$/.test(kind)) return "down";
  return "set";
}

function faultKind(f) {
  if (f.action === "gossip") return f.n ? "gossip-on" : "gossip-off";
  if (f.action === "stale") return f.n ? "stale" : "stale-off";
  if (f.action === "slow") return f.n ? "slow" : "not-slow";
  return f.action;
}

/* The fault in the words of the command that made it. */
function faultLabel(f) {
  switch (f.action) {
  case "az-down": case "az-up": case "partition": return f.action + " " + f.az;
  case "node-stop": case "node-start": return f.action + " " + f.node;
  case "slow": return "slow " + f.node + " " + f.n + " ms";
  case "stale": return "stale " + f.node + (f.n ? " on" : " off");
  case "gossip": return "gossip " + f.node + (f.n ? " on" : " off");
  case "drop": return "drop " + f.node + " ×" + f.n;
  case "writer-crash": case "writer-stop": case "engine-crash":
    return f.action + (f.node && f.node !== "engine" ? " (" + f.node + ")" : "");
  default: return f.action;
  }
}

/* The lanes a fault mark goes in: the engine's for a writer fault, the
 * node's, the AZ's nodes', every node's for a heal. */
function faultLanes(f, nodes) {
  if (/^(writer|engine)-/.test(f.action)) return ["engine"];
  if (f.action === "heal") return nodes.map((n) => n.id);
  if (f.node && nodes.some((n) => n.id === f.node)) return [f.node];
  if (f.az) return nodes.filter((n) => n.az === f.az).map((n) => n.id);
  return ["coord"];
}

function noteFaults(st, now) {
  for (const f of st.faults || []) {
    const key = f.seq + " " + f.action + " " + f.node + " " + f.az;
    if (!faultsSeen.has(key))
      faultsSeen.set(key, { t: now - f.age_ms, kind: faultKind(f), label: faultLabel(f), f });
  }
  for (const [k, x] of faultsSeen) if (x.t < now - KEEP_MS * 3) faultsSeen.delete(k);
}

function record(st, t) {
  const s = { t, ok: !!st };
  if (st) {
    /* No engine has reported since the coordinator started: its VDL is
     * not known, so the plot leaves a gap rather than drop to 0. */
    if (st.engine.addr) { s.vdl = st.vdl; s.vcl = st.vcl; }
    s.epoch = st.epoch; s.commits = st.commits;
    s.engine = st.engine.state; s.ntruncs = st.truncations.length;
    s.nodes = {}; s.flags = {}; s.scl = {};
    for (const n of st.nodes) {
      s.nodes[n.id] = nodeState(n);
      if (nodeFlags(n)) s.flags[n.id] = nodeFlags(n);
    }
    for (const pg of st.pgs)
      /* 0: no records yet, or not reported since the coordinator started:
       * nothing to draw. */
      for (const seg of pg.segments) if (seg.scl) s.scl[seg.node + "/" + pg.pg] = seg.scl;
  }
  samples.push(s);
  while (samples.length && samples[0].t < t - KEEP_MS) samples.shift();
}

/* Change per second of field over the last few seconds of samples. */
function rate(field) {
  const ok = samples.filter((s) => s.ok && s[field] !== undefined);
  if (ok.length < 2) return null;
  const b = ok[ok.length - 1];
  let a = ok[0];
  for (const s of ok) if (b.t - s.t <= 5000) { a = s; break; }
  if (b.t === a.t || b.epoch !== a.epoch) return null;
  return (b[field] - a[field]) * 1000 / (b.t - a.t);
}

function fmtRate(r, unit) {
  if (r === null) return "\u00a0";
  return (r >= 0 ? "+" : "") + (Math.abs(r) >= 100 ? Math.round(r) : r.toFixed(1)) + " " + unit;
}

function ago(ms) {
  return ms < 60000 ? Math.round(ms / 1000) + " s ago" : Math.round(ms / 60000) + " min ago";
}

/* A value too long for its card gets a smaller font, never a wider card. */
function fitText(el) {
  el.style.fontSize = "";
  let px = parseFloat(getComputedStyle(el).fontSize);
  while (el.scrollWidth > el.clientWidth + 1 && px > 11) el.style.fontSize = (px -= 1) + "px";
}

/* ---- the numbers and the AZs ---------------------------------------------- */

function drawMetrics(st) {
  $("volume").textContent = st.volume;
  $("vdl").textContent = st.vdl;
  $("vcl").textContent = st.vcl;
  $("next_lsn").textContent = st.next_lsn;
  $("epoch").textContent = st.epoch;
  $("commits").textContent = st.commits;
  $("truncations").textContent = st.truncations.length;
  $("vdl-rate").textContent = fmtRate(rate("vdl"), "LSN/s");
  $("commit-rate").textContent = fmtRate(rate("commits"), "/s");
  $("inflight").textContent = st.next_lsn > st.vdl + 1 ? (st.next_lsn - st.vdl - 1) + " above VDL" : "\u00a0";
  const t = st.truncations[st.truncations.length - 1];
  $("last-trunc").textContent = t ? "last (" + t.from + ", " + t.to + "]" : "none yet";
  const e = $("engine");
  e.dataset.state = st.engine.state;
  e.textContent = st.engine.state;
  $("engine-addr").textContent = st.engine.addr || "\u00a0";
  const lw = st.lal_window || { used: 0, lal: 0 };
  $("log-edge").textContent = lw.used + " / " + lw.lal + " LAL";
  const pr = st.pending_records || [], fen = st.fenced_engines || [];
  $("log-pending").textContent = (pr.length ? "lsn " + pr[0].lsn + " acked by " +
      (pr[0].acked_by.join(" ") || "none") + " (" + pr[0].acks + " of 4)" : "nothing waits for a quorum") +
    fen.map((x) => " · fenced " + x.addr.replace(/^.*:/, ":") + " (epoch " + x.epoch + ")").join("");
  const f = st.failover;
  const fe = $("failover");
  if (!f) {
    fe.textContent = "–";
    fe.dataset.state = "wait";
    $("failover-last").textContent = "\u00a0";
  } else {
    const lost = f.writer_lost && !f.promoting;
    fe.dataset.state = f.promoting || lost ? "down" : "up";
    fe.textContent = f.promoting ? "promoting " + f.promoting.replace(/^.*:/, ":") :
      lost ? "writer lost" + (f.on ? "" : " (failover off)") :
      "writer heard " + (f.writer_silent_ms / 1000).toFixed(1) + " s ago";
    const l = f.last || {};
    $("failover-last").textContent = (f.on ? "on" : "off") + " · " + f.candidates + " can take over · " +
      (f.failovers ? f.failovers + " done; last " + l.from.replace(/^.*:/, ":") + " → " +
        l.to.replace(/^.*:/, ":") + " (epoch " + l.epoch + "): chosen " + (l.detect_ms / 1000).toFixed(1) +
        " s, epoch " + (l.took_ms / 1000).toFixed(1) + " s after the last probe" : "none yet");
    $("failover-last").title = "chosen: when the coordinator picked the replica; epoch: when it took its epoch, both after the old writer's last probe";
  }
  const reps = st.replicas || [];
  $("replicas").textContent = reps.length;
  /* (The PGMRPL is the next card's.) */
  $("replica-lag").textContent = reps.length ? reps.map((r) => r.addr.replace(/^.*:/, ":") + " lag " +
    r.lag_lsn + " LSN / " + r.lag_ms + " ms").join(" · ") : "none";
  $("replica-lag").title = reps.map((r) => r.addr + " applied VDL " + r.applied_vdl).join("; ");
  const h = st.read_hold || {};
  const sg = (x) => (Number(x) >= 0 ? "+" : "") + x;
  $("read-hold").textContent = h.pgmrpl === undefined ? "–" : h.pgmrpl;
  $("read-hold-cost").textContent = !h.holder ? "at the VDL: nothing held" :
    (h.holder === "replica" ? "replica " + h.replica.replace(/^.*:/, ":") +
      (h.client ? ", client " + h.client + " for " + (h.held_ms / 1000).toFixed(1) + " s" : "")
     : "the writer's reads") + " · " + h.lsns_behind_vdl + " LSN behind · held " +
    (h.still_ms / 1000).toFixed(1) + " s: " + sg(h.growth_records) + " records, " +
    sg(h.growth_versions) + " versions, " + sg((h.growth_bytes / 1048576).toFixed(1)) + " MiB";
  $("note").textContent = st.exists ? "" : "volume " + st.volume + " not created yet";
  for (const v of document.querySelectorAll(".metric .v")) fitText(v);
}

/* Drop faults this node took lately (a fault that leaves no state: the
 * badge says so for a minute, the hole it made says the rest). */
function recentDrops(id, now) {
  let n = 0, t = 0;
  for (const x of faultsSeen.values())
    if (x.f.action === "drop" && x.f.node === id && now - x.t < 60000) { n += x.f.n; t = Math.max(t, x.t); }
  return n ? { n, t } : null;
}

function drawAzs(st, now) {
  /* Each node's segments, and each PG's highest SCL: a segment below it
   * is missing records its peers have (gossip will fill them). */
  const mine = {}, peak = {};
  for (const pg of st.pgs) {
    /* (An incoming next segment hydrates towards its peers: it is not one.) */
    peak[pg.pg] = Math.max(0, ...pg.segments.filter((s) => !s.next).map((s) => s.scl));
    for (const seg of pg.segments) {
      const nx = !seg.next && pg.segments.find((g) => g.next && g.pos === seg.pos);
      (mine[seg.node] = mine[seg.node] || []).push({ pg: pg.pg, scl: seg.scl,
        max: seg.max_lsn || 0, epoch: seg.epoch || 0, next: !!seg.next, pos: seg.pos,
        hydrating: !!seg.hydrating, to: nx ? nx.node : "", target: moveTarget(st, pg, seg.pos) });
    }
  }
  const azs = {};
  st.nodes.forEach((n, i) => { (azs[n.az] = azs[n.az] || []).push([n, i]); });
  let html = "";
  for (const az of Object.keys(azs).sort()) {
    const up = azs[az].filter(([n]) => isUp(n)).length;
    const cut = azs[az].filter(([n]) => nodeState(n) === "partitioned").length;
    const azState = up === 0 ? "down" : cut === azs[az].length ? "partitioned" : "up";
    html += '<div class="az" id="az-' + esc(az) + '" data-state="' + azState + '"><h3>AZ ' + esc(az) + "<span>" +
            (azState === "down" ? "AZ down: " : azState === "partitioned" ? "partitioned: " : "") + up + " of " +
            azs[az].length + " up" + (cut ? ", " + cut + " cut off" : "") + "</span></h3><div class=\"nodes\">";
    for (const [n, i] of azs[az]) {
      const state = nodeState(n);
      const label = state === "slow" ? "slow " + n.slow_ms + " ms" : state;
      const flagsOn = isUp(n) && state !== "retired";
      const dr = recentDrops(n.id, now);
      html += '<div class="node" id="node-' + esc(n.id) + '" data-state="' + state + '">' +
              '<div class="top"><span class="id">' + esc(n.id) + '</span><span class="badge ' + state + '">' +
              esc(label) + "</span>" +
              (flagsOn && n.stale ? '<span class="badge stale">stale pages</span>' : "") +
              (flagsOn && n.no_gossip ? '<span class="badge gossip-off">gossip off</span>' : "") +
              (dr ? '<span class="badge drop" title="drop: Appends lost ' + ago(now - dr.t) + '">dropped ' + dr.n + "</span>" : "") +
              '<span class="addr num">' + esc(n.addr.replace(/^127\.0\.0\.1/, "")) + "</span></div>";
      const segs = mine[n.id] || [];
      if (!segs.length) html += '<div class="none">no segments of this volume</div>';
      else {
        html += '<ul class="segs"><li class="seghead"><span>PG</span><span>SCL</span><span>vs. peers</span></li>';
        for (const s of segs) {
          if (s.next) {
            /* An incoming next segment (member.h): how far it has hydrated
             * towards what it must reach to take the position (M4). */
            html += '<li class="seg next" id="seg-' + esc(n.id) + "-" + s.pg + '" data-pg="' + s.pg +
                    '" data-scl="' + s.scl + '" data-next="1" data-pos="' + s.pos + '" title="' + esc(n.id) +
                    " is the incoming next segment of protection group " + s.pg + ", position " + s.pos +
                    ": it takes writes, and counts for the quorum only up to its SCL" + '">' +
                    '<span class="pg num">' + s.pg + '</span><span class="num">' + s.scl + "</span>" +
                    '<span class="lag num">next · ' + (s.hydrating ? "hydrating " + s.scl + "/" + s.target
                                                                    : "caught up") + "</span></li>";
            continue;
          }
          const behind = peak[s.pg] - s.scl;
          html += '<li class="seg' + (behind > 0 ? " behind" : "") + '" id="seg-' + esc(n.id) + "-" + s.pg +
                  '" style="--c:' + nodeColor(n.id, i) +
                  '" data-pg="' + s.pg + '" data-scl="' + s.scl + '" title="SCL of ' + esc(n.id) + "'s segment of protection group " + s.pg + '">' +
                  '<span class="pg num">' + s.pg + '</span><span class="num">' + s.scl + "</span>" +
                  '<span class="lag num">' + (s.to ? '<span class="leaving">leaving → ' + esc(s.to) + "</span> " : "") +
                  (behind > 0 ? behind + " behind" : "in step") +
                  /* Records above a hole (gossip fills it, §3.3); an epoch the
                   * newest writer has not brought it yet (§4.3). */
                  (s.max > s.scl ? ' <span class="hole" data-max="' + s.max + '" title="a hole: it holds records up to ' + s.max +
                     ' above records it misses">hole to ' + s.max + "</span>" : "") +
                  (s.epoch && s.epoch < st.epoch ? ' <span class="oldepoch">epoch ' + s.epoch + "</span>" : "") +
                  "</span></li>";
        }
        html += "</ul>";
      }
      html += "</div>";
    }
    html += "</div></div>";
  }
  $("azs").innerHTML = html || '<div class="none">no nodes registered</div>';
}

/* ---- membership: moves in flight, time to repair ----------------------------- */

/* What position pos of pg's next segment must reach to finish (member.h
 * M4): the coordinator's target, else its current segments' best SCL. */
function moveTarget(st, pg, pos) {
  const m = (st.repairs || []).find((r) => r.pg === pg.pg && r.pos === pos);
  if (m && m.target_scl) return m.target_scl;
  return Math.max(0, ...pg.segments.filter((s) => !s.next).map((s) => s.scl));
}

function secs(ms) {
  return ms < 1000 ? ms + " ms" : ms < 10000 ? (ms / 1000).toFixed(1) + " s" : Math.round(ms / 1000) + " s";
}

const MEMBER_PGS = 3;           /* moving PGs drawn in full; the rest summed up */

/* Per moving PG: its membership epoch, its positions (a moving one with
 * its current and next node), how many can count towards a write quorum
 * now (M1, M2: a moving position only once its next segment caught up),
 * and each move with its kind, age and the next segment's progress. Then
 * the nodes out of service, the last times to repair, the stable PGs. */
function drawMembers(st) {
  const nodes = {};
  for (const n of st.nodes) nodes[n.id] = n;
  const serves = (id) => nodes[id] && isUp(nodes[id]) && !nodes[id].partitioned;
  const moves = st.repairs || [];
  const moving = st.pgs.filter((pg) => pg.segments.some((s) => s.next));
  let html = "";
  for (const pg of moving.slice(0, MEMBER_PGS)) {
    const cur = pg.segments.filter((s) => !s.next), nx = pg.segments.filter((s) => s.next);
    let count = 0, chips = "";
    cur.forEach((c, pos) => {
      const g = nx.find((s) => s.pos === pos);
      const ok = serves(c.node) && (!g || (serves(g.node) && !g.hydrating));
      count += ok ? 1 : 0;
      chips += '<span class="pos' + (g ? " moving" : "") + (ok ? "" : " out") + '" title="position ' + pos +
               (ok ? ": counts" : ": counts for no new record now") + '"><i>' + pos + "</i>" + esc(c.node) +
               (g ? "→<b>" + esc(g.node) + "</b>" : "") + "</span>";
    });
    html += '<div class="mpg" id="mpg-' + pg.pg + '" data-mepoch="' + pg.mepoch + '" data-count="' + count + '">' +
            '<div class="mhead"><b>pg ' + pg.pg + "</b> mepoch " + pg.mepoch +
            '<span class="' + (count >= 4 ? "qok" : "qbad") + '">' + count + " of " + cur.length +
            " positions count, 4 needed</span></div>" + '<div class="chips">' + chips + "</div>";
    for (const m of moves.filter((r) => r.pg === pg.pg)) {
      const pct = m.target_scl ? Math.min(100, Math.round(100 * m.scl / m.target_scl)) : 100;
      html += '<div class="move" data-pg="' + m.pg + '" data-pos="' + m.pos + '" data-kind="' + esc(m.kind) +
              '" data-from="' + esc(m.from) + '" data-to="' + esc(m.to) + '" data-age="' + m.age_ms + '">' +
              "<span>pos " + m.pos + " " + esc(m.kind) + " " + esc(m.from) + " → <b>" + esc(m.to) + "</b></span>" +
              '<span class="num">' + secs(m.age_ms) + "</span>" +
              '<span class="bar" title="the next segment\'s SCL against what it must reach to take the position">' +
              '<i style="width:' + pct + '%"></i></span><span class="num">SCL ' + m.scl + "/" + m.target_scl +
              (m.adopted ? "" : ' <span class="notyet" title="the writer has not reported using this membership yet">writer: not yet</span>') +
              "</span></div>";
    }
    html += "</div>";
  }
  if (moving.length > MEMBER_PGS)
    html += '<div class="mline">and ' + (moving.length - MEMBER_PGS) + " more PGs moving</div>";
  for (const n of st.nodes)
    if (n.state === "draining" || n.state === "retired")
      html += '<div class="mline">node <b>' + esc(n.id) + "</b> " + n.state +
              (n.state === "draining" ? ": its segments move to spares in AZ " + esc(n.az) : ": hosts nothing") + "</div>";
  const stable = st.pgs.filter((pg) => !pg.segments.some((s) => s.next));
  if (stable.length) {
    const ep = stable.map((pg) => pg.mepoch);
    const lo = Math.min(...ep), hi = Math.max(...ep);
    html += '<div class="mline">' + (moving.length ? "the other " : "all ") + stable.length + " PG" +
            (stable.length === 1 ? "" : "s") + " stable, mepoch " + (lo === hi ? lo : lo + "–" + hi) + "</div>";
  }
  const mttr = st.mttr_ms || [];
  html += '<div class="mline" id="mttr" data-n="' + mttr.length + '">time to repair, last: ' +
          (mttr.length ? mttr.map(secs).join(", ") : "none yet") + "</div>";
  $("members").innerHTML = html;
  $("mseq").textContent = "mseq " + (st.mseq || 0) + " · " + moves.length + " position" +
    (moves.length === 1 ? "" : "s") + " moving";
}

/* ---- faults: now, and lately ------------------------------------------------ */

function drawFaults(st, now) {
  const items = [];
  for (const n of st.nodes) {
    const s = nodeState(n);
    if (s !== "up" && s !== "draining" && s !== "retired")
      items.push([s, n.id + " " + (s === "slow" ? "slow " + n.slow_ms + " ms" : s)]);
    if (isUp(n) && n.stale) items.push(["stale", n.id + " serves stale pages"]);
    if (isUp(n) && n.no_gossip) items.push(["gossip-off", n.id + " gossip off"]);
  }
  /* A writer in its recovery says what it waits for (vfs/rcvround.c rule W). */
  if (st.engine.state === "recovering")
    items.push(["recovering", "writer recovering: " + (st.recovering || "")]);
  else if (st.engine.state !== "up") items.push(["down", "writer down (no report)"]);
  let html = items.map(([k, what]) => '<li class="now" data-kind="' + k + '"><i class="chip" style="background:' +
    FAULT_COLORS[k] + '"></i><span class="what">' + esc(what) + '</span><span class="when">now</span></li>').join("");
  const past = [...faultsSeen.values()].sort((a, b) => b.t - a.t).slice(0, Math.max(2, 7 - items.length));
  html += past.map((x) => '<li class="past" data-kind="' + x.kind + '"><i class="chip" style="background:' +
    FAULT_KINDS[x.kind][0] + '"></i><span class="what">' + esc(x.label) + '</span><span class="when">' +
    ago(now - x.t) + "</span></li>").join("");
  $("faults").innerHTML = html || '<li class="past"><span class="what">no fault since the coordinator started</span></li>';
}

/* ---- the page measures itself ------------------------------------------------ */

/* Write on <html> what a test (or a curious student) checks: the
 * document's width against the window's, the cards whose content does
 * not fit them (a wider child, a value cut short), and the drawings'
 * labels that overlap. */
function measureLayout() {
  const root = document.documentElement, vw = window.innerWidth;
  const clipped = [];
  for (const p of document.querySelectorAll(".panel, .az, .node")) {
    const r = p.getBoundingClientRect();
    if (r.right > vw + 0.5 || p.scrollWidth > p.clientWidth + 1) clipped.push(p.id || p.className);
  }
  for (const v of document.querySelectorAll(".metric .v"))
    if (v.scrollWidth > v.clientWidth + 1) clipped.push(v.id);
  root.dataset.scrollWidth = root.scrollWidth;
  root.dataset.viewWidth = vw;
  root.dataset.clipped = clipped.join(" ");
  /* Labels of the drawings that cover one another (as drawn, in the
   * browser's fonts): their number, and the first few pairs. */
  const overlaps = [];
  for (const svg of [$("acked"), $("timeline")]) {
    const t = [...svg.querySelectorAll("text")].map((e) => ({ r: e.getBoundingClientRect(), s: e.textContent }))
      .filter((b) => b.r.width > 0 && b.s.trim());
    for (let i = 0; i < t.length; i++)
      for (let j = i + 1; j < t.length; j++) {
        const a = t[i].r, b = t[j].r;
        if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 2 && b.top < a.bottom - 2)
          overlaps.push(t[i].s + " | " + t[j].s);
      }
  }
  root.dataset.overlaps = overlaps.length;
  root.dataset.overlapPairs = overlaps.slice(0, 6).join(" ;; ");
}

/* ---- polling -------------------------------------------------------------------- */

function showConn(ok, why) {
  const c = $("conn");
  c.dataset.state = ok ? "live" : "down";
  c.textContent = ok ? "live · " + new Date().toLocaleTimeString()
                     : "coordinator unreachable" + (why ? " (" + why + ")" : "");
}

function drawAll() {
  if (last) {
    const now = Date.now();
    drawMetrics(last);
    drawAzs(last, now);
    drawMembers(last);
    drawFaults(last, now);
    drawAcked(last);
  }
  drawTimeline();
  measureLayout();
}

async function poll() {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 3000);
  try {
    const r = await fetch("status.json?volume=" + encodeURIComponent(volume),
                          { cache: "no-store", signal: ctl.signal });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const st = await r.json();
    const legendChanged = !last || last.nodes.length !== st.nodes.length;
    last = st;
    const now = Date.now();
    record(st, now);
    noteFaults(st, now);
    if (legendChanged) drawLegend();
    showConn(true);
  } catch (e) {
    record(null, Date.now());
    showConn(false, e.name === "AbortError" ? "timeout" : e.message);
  } finally {
    clearTimeout(timer);
  }
  drawAll();
  setTimeout(poll, POLL_MS);
}

/* The coordinator's last minutes first (coord/history.c): each sample is
 * what record() makes, with its age instead of a time. */
async function loadHistory() {
  try {
    const r = await fetch("history.json", { cache: "no-store" });
    if (r.ok && volume === "main") {
      const h = await r.json(), now = Date.now();
      for (const s of h.samples) {
        s.t = now - s.age_ms;
        delete s.age_ms;
        if (s.t >= now - KEEP_MS) samples.push(s);
      }
    }
  } catch (e) { /* an older coordinator, or none: the polls alone */ }
}

window.addEventListener("resize", drawAll);
loadHistory().then(poll);
