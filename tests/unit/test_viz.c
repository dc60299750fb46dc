/*
 * test_viz.c: the drawing of a cluster (`auralog viz`, src/cli/viz.c).
 *
 * Builds the Status a coordinator would send for a six-node cluster over
 * AZs A, B and C with two PGs, one node down, one partitioned and one
 * slow, an engine with its VDL and VCL and a log tail with CPLs, and a
 * truncation left by a recovery; then checks that the DOT text graphviz
 * reads shows all of it: the six nodes in three AZ clusters, the VDL, the
 * down and partitioned nodes marked, the truncated range with its epoch,
 * records placed on the right side of the VDL and VCL flags, and under
 * each PG's records a row per segment: which it holds, its holes shaded,
 * its SCL marked. Also: no engine, odd text in addresses, a tail naming
 * PGs the volume lacks.
 *
 * AURALOG_VIZ_OUT=FILE writes the sample drawing's DOT there (to look at:
 * dot -Tpng FILE -o x.png).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "cli/viz.h"

/* ---- a synthetic status --------------------------------------------------- */
/* (see log_edge_is_drawn for the pending records, a hole, an old epoch and
 * a fenced engine) */

static const char *ids[6] = {"A1", "A2", "B1", "B2", "C1", "C2"};

struct sample {
  Auralog__Status st;
  Auralog__Volume v;
  Auralog__Pg pg[2], *pgp[2];
  Auralog__Segment seg[2][6], *segp[2][6];
  Auralog__NodeInfo node[6], *nodep[6];
  char addr[6][32];
  Auralog__SegStat ss[12], *ssp[12];
  char *ssn[12];
  Auralog__TruncRange tr, *trp[1];
  Auralog__EngineStat e;
  Auralog__TailRec tail[16], *tailp[16];
};

/* VDL 10000130 (a CPL of pg 0), VCL 10000133, after a recovery in epoch 2
 * that truncated (100, 10000100]. */
#define VDL 10000130u
#define VCL 10000133u

static void sample(struct sample *s)
{
  memset(s, 0, sizeof *s);
  auralog__status__init(&s->st);
  auralog__volume__init(&s->v);
  s->st.exists = 1;
  s->st.volume = &s->v;
  s->v.id = 1;
  s->v.name = "main";
  s->v.page_size = 4096;
  s->v.pg_pages = 256;
  s->v.epoch = 3;
  for (int i = 0; i < 6; i++) {
    Auralog__NodeInfo *n = &s->node[i];
    auralog__node_info__init(n);
    snprintf(s->addr[i], sizeof s->addr[i], "127.0.0.1:%d", 7401 + i);
    n->id = (char *)ids[i];
    n->az = (char *)(ids[i][0] == 'A' ? "A" : ids[i][0] == 'B' ? "B" : "C");
    n->addr = s->addr[i];
    n->up = i != 3;                 /* B2 down */
    n->partitioned = i == 4;        /* C1 partitioned */
    n->slow_ms = i == 1 ? 400 : 0;  /* A2 slow */
    s->nodep[i] = n;
  }
  s->st.nodes = s->nodep;
  s->st.n_nodes = 6;
  for (int p = 0; p < 2; p++) {
    auralog__pg__init(&s->pg[p]);
    s->pg[p].pg = (uint32_t)p;
    s->pg[p].first_page = (uint32_t)p * 256;
    s->pg[p].npages = 256;
    for (int i = 0; i < 6; i++) {
      Auralog__Segment *g = &s->seg[p][i];
      auralog__segment__init(g);
      g->volume_id = 1;
      g->pg = (uint32_t)p;
      g->node = (char *)ids[i];
      g->az = s->node[i].az;
      g->addr = s->addr[i];
      s->segp[p][i] = g;
      Auralog__SegStat *ss = &s->ss[p * 6 + i];
      auralog__seg_stat__init(ss);
      ss->volume_id = 1;
      ss->pg = (uint32_t)p;
      ss->scl = p == 0 ? (i == 3 ? 10000121 : VDL) : (i == 3 ? 10000122 : 10000129);
      ss->epoch = 3;
      s->ssp[p * 6 + i] = ss;
      s->ssn[p * 6 + i] = (char *)ids[i];
    }
    s->pg[p].segments = s->segp[p];
    s->pg[p].n_segments = 6;
    s->pgp[p] = &s->pg[p];
  }
  s->v.pgs = s->pgp;
  s->v.n_pgs = 2;
  s->st.segs = s->ssp;
  s->st.n_segs = 12;
  s->st.seg_nodes = s->ssn;
  s->st.n_seg_nodes = 12;
  auralog__trunc_range__init(&s->tr);
  s->tr.epoch = 2;
  s->tr.from = 100;
  s->tr.to = 10000100;
  s->trp[0] = &s->tr;
  s->v.truncs = s->trp;
  s->v.n_truncs = 1;

  auralog__engine_stat__init(&s->e);
  s->e.volume = "main";
  s->e.addr = "127.0.0.1:7500";
  s->e.epoch = 3;
  s->e.vdl = VDL;
  s->e.vcl = VCL;
  s->e.next_lsn = 10000136;
  s->e.lal = 10000000;
  static const struct { uint32_t pg; uint64_t lsn; int cpl; } t[] = {
    {0, 10000121, 0}, {0, 10000123, 1}, {0, 10000125, 0}, {0, 10000127, 1},
    {0, 10000130, 1}, {0, 10000133, 0}, {0, 10000135, 1},
    {1, 10000122, 0}, {1, 10000124, 0}, {1, 10000126, 0}, {1, 10000129, 0},
    {1, 10000132, 0}, {1, 10000134, 0},
  };
  size_t nt = sizeof t / sizeof t[0];
  for (size_t i = 0; i < nt; i++) {
    auralog__tail_rec__init(&s->tail[i]);
    s->tail[i].pg = t[i].pg;
    s->tail[i].lsn = t[i].lsn;
    s->tail[i].cpl = t[i].cpl;
    s->tailp[i] = &s->tail[i];
  }
  s->e.tail = s->tailp;
  s->e.n_tail = nt;
  s->st.engine = &s->e;
  s->st.engine_age_ms = 100;
}

/* ---- helpers -------------------------------------------------------------- */

/* One graphviz context for the whole run: graphviz 2.42's pango plugin
 * remembers the last font name across contexts, and a second context
 * would make it read the first one's freed copy. */
static GVC_t *gvc;

/* DOT text graphviz reads and lays out; returns the graph (agclose it). */
static Agraph_t *parse(const char *dot)
{
  assert_non_null(dot);
  Agraph_t *g = agmemread(dot);
  if (g == NULL)
    fail_msg("graphviz cannot read the DOT:\n%s", dot);
  assert_int_equal(gvLayout(gvc, g, "dot"), 0);
  gvFreeLayout(gvc, g);
  return g;
}

static const char *attr(void *obj, const char *name)
{
  char *v = agget(obj, (char *)name);
  return v ? v : "";
}

/* The node whose label names id as its title (the membership panel
 * names nodes too). */
static Agnode_t *node_named(Agraph_t *g, const char *id)
{
  char want[32];
  snprintf(want, sizeof want, "<b>%s</b>", id);
  for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n))
    if (strcmp(agnameof(n), "members") != 0 && strstr(attr(n, "label"), want))
      return n;
  return NULL;
}

/* ---- tests ---------------------------------------------------------------- */

static void sample_parses_and_lays_out(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  char *dot = viz_dot(&s.st);
  const char *out = getenv("AURALOG_VIZ_OUT");
  if (out) {
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fputs(dot, f);
    fclose(f);
  }
  Agraph_t *g = parse(dot);
  agclose(g);
  free(dot);
}

static void six_nodes_in_three_az_clusters(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  char *dot = viz_dot(&s.st);
  Agraph_t *g = parse(dot);
  int seen[6] = {0}, clusters = 0;
  for (Agraph_t *c = agfstsubg(g); c; c = agnxtsubg(c)) {
    if (strncmp(agnameof(c), "cluster_az", 10) != 0)
      continue;
    clusters++;
    const char *label = attr(c, "label");
    int members = 0;
    for (Agnode_t *n = agfstnode(c); n; n = agnxtnode(c, n)) {
      members++;
      for (int i = 0; i < 6; i++) {
        char want[32];
        snprintf(want, sizeof want, "<b>%s</b>", ids[i]);
        if (strstr(attr(n, "label"), want)) {
          char az[8];
          snprintf(az, sizeof az, "AZ %c", ids[i][0]);
          if (strstr(label, az) == NULL)
            fail_msg("node %s drawn in cluster '%s'", ids[i], label);
          seen[i]++;
        }
      }
    }
    assert_int_equal(members, 2);
  }
  assert_int_equal(clusters, 3);
  for (int i = 0; i < 6; i++)
    if (seen[i] != 1)
      fail_msg("node %s drawn %d times", ids[i], seen[i]);
  agclose(g);
  free(dot);
}

static void shows_vdl_vcl_and_scls(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  char *dot = viz_dot(&s.st);
  assert_non_null(strstr(dot, "VDL 10000130"));
  assert_non_null(strstr(dot, "VCL 10000133"));
  /* Each node lists both its segments with their SCL; B2 is behind. */
  Agraph_t *g = parse(dot);
  for (int i = 0; i < 6; i++) {
    Agnode_t *n = node_named(g, ids[i]);
    assert_non_null(n);
    const char *l = attr(n, "label");
    assert_non_null(strstr(l, "pg 0"));
    assert_non_null(strstr(l, "pg 1"));
    assert_non_null(strstr(l, i == 3 ? "10000121" : "10000130"));
  }
  agclose(g);
  free(dot);
}

static void down_partitioned_slow_are_marked(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  char *dot = viz_dot(&s.st);
  Agraph_t *g = parse(dot);
  Agnode_t *b2 = node_named(g, "B2"), *c1 = node_named(g, "C1"), *a2 = node_named(g, "A2"),
           *b1 = node_named(g, "B1");
  assert_non_null(strstr(attr(b2, "label"), "DOWN"));
  assert_non_null(strstr(attr(b2, "style"), "dashed"));
  assert_non_null(strstr(attr(c1, "label"), "PARTITIONED"));
  assert_non_null(strstr(attr(c1, "style"), "dashed"));
  assert_non_null(strstr(attr(a2, "label"), "SLOW"));
  assert_null(strstr(attr(b1, "label"), "DOWN"));
  assert_null(strstr(attr(b1, "style"), "dashed"));
  /* The engine's link to each: dotted to the down node, dashed to the
   * partitioned one, plain to a healthy one. */
  Agnode_t *eng = agnode(g, "engine", 0);
  assert_non_null(eng);
  Agedge_t *e = agedge(g, eng, b2, NULL, 0);
  assert_non_null(e);
  assert_string_equal(attr(e, "style"), "dotted");
  e = agedge(g, eng, c1, NULL, 0);
  assert_non_null(e);
  assert_string_equal(attr(e, "style"), "dashed");
  /* A legend says what that means. */
  Agnode_t *legend = agnode(g, "legend", 0);
  assert_non_null(legend);
  assert_non_null(strstr(attr(legend, "label"), "partitioned"));
  agclose(g);
  free(dot);
}

static void truncation_range_and_epoch(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  char *dot = viz_dot(&s.st);
  assert_non_null(strstr(dot, "(100, 10000100]"));
  Agraph_t *g = parse(dot);
  /* In the list beside the engine and in each strip, with its epoch. */
  Agnode_t *t = agnode(g, "truncs", 0);
  assert_non_null(t);
  assert_non_null(strstr(attr(t, "label"), "(100, 10000100]  epoch 2"));
  const char *strip = attr(agnode(g, "pg0", 0), "label");
  assert_non_null(strstr(strip, "(100, 10000100]<br/>epoch 2"));
  /* It comes before every record (they are all above it). */
  assert_true(strstr(strip, "10000100]") < strstr(strip, "10000121"));
  agclose(g);
  free(dot);
}

/* The strip of pg 0 in LSN order: durable records, the VDL flag, the
 * complete one, the VCL flag, the pending one; CPLs marked. */
static void strip_orders_records_and_flags(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  char *dot = viz_dot(&s.st);
  Agraph_t *g = parse(dot);
  Agnode_t *pg0 = agnode(g, "pg0", 0), *pg1 = agnode(g, "pg1", 0);
  assert_non_null(pg0);
  assert_non_null(pg1);
  const char *l = attr(pg0, "label");
  const char *r127 = strstr(l, "10000127"), *vdl = strstr(l, "<b>VDL</b>"),
             *r133 = strstr(l, "10000133"), *vcl = strstr(l, "<b>VCL</b>"),
             *r135 = strstr(l, "10000135");
  assert_non_null(r127);
  assert_non_null(vdl);
  assert_non_null(r133);
  assert_non_null(vcl);
  assert_non_null(r135);
  assert_true(r127 < vdl && vdl < r133 && r133 < vcl && vcl < r135);
  /* Four CPLs in pg 0's tail (one pending), none in pg 1's. */
  int cpls = 0;
  for (const char *p = l; (p = strstr(p, "CPL")) != NULL; p++)
    cpls++;
  assert_int_equal(cpls, 4);
  assert_null(strstr(attr(pg1, "label"), "CPL"));
  /* Durable, complete and pending records look different. */
  assert_non_null(strstr(l, "#a6d96a"));
  assert_non_null(strstr(l, "#fee08b"));
  assert_non_null(strstr(l, "style=\"dashed\"><font point-size=\"10\"><b>10000135"));
  agclose(g);
  free(dot);
}

static void vdl_equal_vcl_is_one_flag(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  s.e.vcl = s.e.vdl;
  char *dot = viz_dot(&s.st);
  assert_non_null(strstr(dot, "VDL=VCL"));
  agclose(parse(dot));
  free(dot);
}

static void no_engine_no_pgs_still_draws(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  s.st.engine = NULL;
  char *dot = viz_dot(&s.st);
  assert_non_null(strstr(dot, "no VDL yet"));
  assert_non_null(strstr(dot, "no recent records"));
  agclose(parse(dot));
  free(dot);
  s.v.n_pgs = 0;
  s.v.n_truncs = 0;
  s.st.exists = 0;
  s.st.n_segs = s.st.n_seg_nodes = 0;
  dot = viz_dot(&s.st);
  assert_non_null(strstr(dot, "not created yet"));
  agclose(parse(dot));
  free(dot);
  s.st.volume = NULL;
  s.st.n_nodes = 0;
  dot = viz_dot(&s.st);
  agclose(parse(dot));
  free(dot);
}

/* Whatever comes over the wire, the DOT stays well formed. */
static void odd_text_and_stray_tail(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  s.node[0].addr = "<b>&\"x\"</td>";
  s.e.addr = "a\"b\\c<\n";
  s.tail[12].pg = 77;               /* a PG the volume does not have */
  char *dot = viz_dot(&s.st);
  Agraph_t *g = parse(dot);
  assert_non_null(node_named(g, "A1"));
  assert_null(agnode(g, "pg77", 0));
  agclose(g);
  free(dot);
}

/* A volume with many PGs: strips for the ones with recent records first,
 * a note for the rest. */
/* The log's edge: a segment holding records above a hole, one at an older
 * epoch, a pending record and who acked it, and a fenced engine. */
static void log_edge_is_drawn(void **state)
{
  (void)state;
  static struct sample s;
  sample(&s);
  s.ss[0].max_lsn = VDL + 5;              /* A1 of pg 0: holds 10000135 above a hole */
  s.ss[4].epoch = 2;                      /* C1 of pg 0: has not heard epoch 3 */
  Auralog__PendingRec pr = AURALOG__PENDING_REC__INIT, *prp = &pr;
  pr.pg = 0;
  pr.lsn = VCL + 1;
  pr.acks = (1u << 0) | (1u << 2) | (1u << 5);   /* A1 B1 C2 */
  s.e.pending_recs = &prp;
  s.e.n_pending_recs = 1;
  Auralog__FencedEngine fe = AURALOG__FENCED_ENGINE__INIT, *fep = &fe;
  fe.addr = "127.0.0.1:7501";
  fe.epoch = 2;
  s.st.fenced = &fep;
  s.st.n_fenced = 1;
  char *dot = viz_dot(&s.st);
  assert_non_null(strstr(dot, "(hole, holds to 10000135)"));
  assert_non_null(strstr(dot, "epoch 2</td>"));
  assert_non_null(strstr(dot, "lsn 10000134 (pg 0) acked by A1 B1 C2: 3 of 4"));
  assert_non_null(strstr(dot, "fenced engine 127.0.0.1:7501 (epoch 2)"));
  assert_non_null(strstr(dot, "LAL window 5 of 10000000 used"));
  free(dot);
  /* After a recovery the writer's window begins at its truncation's end,
   * not at the VDL: a recovered writer has handed out nothing in it yet
   * (as status says), not the whole LAL. */
  Auralog__TruncRange tr = AURALOG__TRUNC_RANGE__INIT;
  tr.epoch = 3;
  tr.from = s.e.vdl;
  tr.to = s.e.vdl + 10000000;
  s.e.trunc = &tr;
  s.e.next_lsn = tr.to + 1;
  dot = viz_dot(&s.st);
  assert_non_null(strstr(dot, "LAL window 0 of 10000000 used"));
  free(dot);
}

/* The words of the cells of segment id's row in the log of pg (held,
 * SCL, hole, missing, ?, band for a flag's column), space-separated. */
static const char *row_cells(const char *label, const char *id)
{
  static char words[512];
  char want[32];
  snprintf(want, sizeof want, "<b>%s</b>", id);
  const char *row = strstr(label, want), *end = row ? strstr(row, "</tr>") : NULL;
  if (row == NULL || end == NULL)
    fail_msg("no row for segment %s in: %s", id, label);
  words[0] = 0;
  for (const char *p = strstr(row, "</td>"); p && p < end; p = strstr(p + 1, "<td")) {
    const char *td = strstr(p, "<td");
    if (td == NULL || td > end)
      break;
    const char *close = strstr(td, "</td>");
    char cell[256];
    snprintf(cell, sizeof cell, "%.*s", (int)(close - td), td);
    const char *w = strstr(cell, "<b>SCL</b>") ? "SCL" : strstr(cell, "<b>hole</b>") ? "hole"
                  : strstr(cell, "to fill") ? "fill"
                  : strstr(cell, "missing") ? "missing" : strstr(cell, "held") ? "held"
                  : strstr(cell, ">?<") ? "?" : "band";
    snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s", words[0] ? " " : "", w);
    p = close;
  }
  return words;
}

/* Under pg 0's records, A2 (SCL 10000123, acked 10000127 and 10000130)
 * holds up to its SCL, misses 10000125 below records it holds (a hole),
 * and misses the two newest; B2, down at 10000121, misses all after it. */
static void segment_rows_show_holes_and_scl(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  s.ss[1].scl = 10000123;                 /* A2 of pg 0 */
  s.ss[1].max_lsn = 10000130;
  s.tail[3].acks = 0x37;                  /* 10000127: all but B2 */
  s.tail[4].acks = 0x37;                  /* 10000130: all but B2 */
  s.tail[5].acks = 0x05;                  /* 10000133: A1 B1 */
  char *dot = viz_dot(&s.st);
  Agraph_t *g = parse(dot);
  const char *l = attr(agnode(g, "pg0", 0), "label");
  /* The leading cell (below the first record), the truncation's column,
   * the seven records, and the VDL and VCL columns after 10000130 and
   * 10000133. */
  assert_string_equal(row_cells(l, "A2"), "held band held SCL hole held held band missing band missing");
  assert_string_equal(row_cells(l, "A1"), "held band held held held held SCL band held band missing");
  assert_string_equal(row_cells(l, "B2"), "held band SCL missing missing missing missing band missing band missing");
  assert_non_null(strstr(l, "<b>B2</b> DOWN  SCL 10000121"));
  assert_non_null(strstr(l, "<b>C1</b> CUT OFF  SCL 10000130"));
  /* The legend says what the cells mean. */
  const char *legend = attr(agnode(g, "legend", 0), "label");
  assert_non_null(strstr(legend, "missing, a later one held"));
  agclose(g);
  free(dot);
}

/* A drain in flight (member.h): pg 0's position 1 moves from A2 (draining)
 * to A3, a spare in AZ A, whose next segment hydrates (SCL 10000100 of
 * 10000130) and acknowledged 10000130 (slot NCOPIES + 1, not its index 6
 * in the segment list). The log labels A3's row as the incoming next
 * segment, says whom it replaces, draws what it lacks as "to fill" (not
 * holes), and its title gives the mepoch, the move and the positions that
 * count (A2's waits for A3, B2 is down, C1 cut off: 3 of 6, below Vw).
 * The nodes' boxes show A2 draining and A3's next segment; a panel lists
 * the move with its kind and age, and the last time to repair. */
static void next_segment_is_drawn_as_incoming(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  Auralog__NodeInfo a3 = s.node[0], *nodep[7];
  a3.id = "A3";
  a3.addr = "127.0.0.1:7407";
  for (int i = 0; i < 6; i++)
    nodep[i] = &s.node[i];
  nodep[6] = &a3;
  s.st.nodes = nodep;
  s.st.n_nodes = 7;
  s.node[1].state = "draining";
  s.node[1].slow_ms = 0;
  Auralog__Segment g = s.seg[0][1], *segp[7];
  g.node = "A3";
  g.pos = 1;
  g.next = 1;
  for (int i = 0; i < 6; i++)
    segp[i] = &s.seg[0][i];
  segp[6] = &g;
  s.pg[0].segments = segp;
  s.pg[0].n_segments = 7;
  s.pg[0].mepoch = 7;
  Auralog__SegStat gs = s.ss[1], *ssp[13];
  char *ssn[13];
  gs.scl = 10000100;
  gs.max_lsn = 10000130;
  for (int i = 0; i < 12; i++) {
    ssp[i] = &s.ss[i];
    ssn[i] = s.ssn[i];
  }
  ssp[12] = &gs;
  ssn[12] = "A3";
  s.st.segs = ssp;
  s.st.seg_nodes = ssn;
  s.st.n_segs = s.st.n_seg_nodes = 13;
  s.tail[4].acks = 0x37 | 1u << (6 + 1);  /* 10000130: all but B2, and A3's slot */
  Auralog__MoveStat m = AURALOG__MOVE_STAT__INIT, *mp[1] = {&m};
  m.pg = 0;
  m.pos = 1;
  m.from = "A2";
  m.to = "A3";
  m.age_ms = 5200;
  m.scl = 10000100;
  m.target_scl = 10000130;
  m.kind = "drain";
  s.st.moves = mp;
  s.st.n_moves = 1;
  uint64_t mttr[1] = {6300};
  s.st.mttr_ms = mttr;
  s.st.n_mttr_ms = 1;
  s.v.mseq = 7;
  char *dot = viz_dot(&s.st);
  Agraph_t *g0 = parse(dot);
  const char *l = attr(agnode(g0, "pg0", 0), "label");
  assert_non_null(strstr(l, "mepoch 7"));
  assert_non_null(strstr(l, "moving: pos 1 A2→A3"));
  assert_non_null(strstr(l, "3 of 6 positions count<br/>(write quorum 4)"));
  assert_non_null(strstr(l, "<b>→A3</b> next (hydrating)"));
  assert_non_null(strstr(l, "SCL 10000100 of 10000130<br/>replaces A2 at position 1"));
  assert_non_null(strstr(l, "<b>A2</b>  <font color=\"#762a83\">leaving</font>  SCL 10000130"));
  /* What it lacks it has yet to be filled with; 10000130 it acknowledged. */
  assert_string_equal(row_cells(l, "→A3"), "band band fill fill fill fill held band fill band fill");
  /* The boxes: A2 draining, A3 hosting pg 0's next segment. */
  const char *a2 = attr(node_named(g0, "A2"), "label");
  assert_non_null(strstr(a2, "<b>DRAINING</b>"));
  assert_non_null(strstr(a2, "pg 0 <font color=\"#762a83\">leaving</font>"));
  const char *a3b = attr(node_named(g0, "A3"), "label");
  assert_non_null(strstr(a3b, "<b>next</b>"));
  assert_non_null(strstr(a3b, "SCL <b>10000100</b>/10000130"));
  /* The panel: the move, its kind and age, the last time to repair. */
  Agnode_t *mem = agnode(g0, "members", 0);
  assert_non_null(mem);
  const char *ml = attr(mem, "label");
  assert_non_null(strstr(ml, "mseq 7: 1 position moving"));
  assert_non_null(strstr(ml, "pg 0 pos 1"));
  assert_non_null(strstr(ml, "drain"));
  assert_non_null(strstr(ml, "5.2 s"));
  assert_non_null(strstr(ml, "SCL 10000100 of 10000130; writer not on it yet"));
  assert_non_null(strstr(ml, "time to repair, last: 6.3 s"));
  assert_non_null(strstr(attr(agnode(g0, "legend", 0), "label"), "incoming next segment"));
  agclose(g0);
  free(dot);
  /* A stable cluster draws no panel. */
  sample(&s);
  dot = viz_dot(&s.st);
  assert_null(strstr(dot, "members ["));
  assert_null(strstr(dot, "moving: "));
  assert_null(strstr(dot, "position moving"));
  assert_null(strstr(dot, "positions moving"));
  free(dot);
}

static void many_pgs_are_summarised(void **state)
{
  (void)state;
  struct sample s;
  sample(&s);
  enum { N = 40 };
  Auralog__Pg pg[N], *pgp[N];
  for (int p = 0; p < N; p++) {
    pg[p] = s.pg[p % 2];
    pg[p].pg = (uint32_t)p;
    pg[p].first_page = (uint32_t)p * 256;
    pgp[p] = &pg[p];
  }
  s.v.pgs = pgp;
  s.v.n_pgs = N;
  s.tail[12].pg = 30;
  char *dot = viz_dot(&s.st);
  Agraph_t *g = parse(dot);
  assert_non_null(agnode(g, "pg30", 0));
  assert_non_null(agnode(g, "pg0", 0));
  assert_null(agnode(g, "pg39", 0));
  assert_non_null(strstr(dot, "and 36 more PGs"));
  agclose(g);
  free(dot);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(sample_parses_and_lays_out),
    cmocka_unit_test(six_nodes_in_three_az_clusters),
    cmocka_unit_test(shows_vdl_vcl_and_scls),
    cmocka_unit_test(down_partitioned_slow_are_marked),
    cmocka_unit_test(truncation_range_and_epoch),
    cmocka_unit_test(log_edge_is_drawn),
    cmocka_unit_test(strip_orders_records_and_flags),
    cmocka_unit_test(vdl_equal_vcl_is_one_flag),
    cmocka_unit_test(no_engine_no_pgs_still_draws),
    cmocka_unit_test(odd_text_and_stray_tail),
    cmocka_unit_test(segment_rows_show_holes_and_scl),
    cmocka_unit_test(many_pgs_are_summarised),
    cmocka_unit_test(next_segment_is_drawn_as_incoming),
  };
  gvc = gvContext();
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  gvFreeContext(gvc);
  return failed;
}
