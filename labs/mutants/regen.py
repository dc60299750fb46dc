#!/usr/bin/env python3
"""Regenerate labs/mutants/labNN/NAME.patch from the reference bodies."""
import os, re, subprocess, sys, tempfile
ROOT = sys.argv[1] if len(sys.argv) > 1 else '.'

M = []  # (lab, name, file, [(old, new)], what)
def m(lab, name, f, edits, what):
    if isinstance(edits, tuple): edits = [edits]
    M.append((lab, name, f, edits, what))

D = 'src/vfs/diff.c'
m(20, 'no_tail', D, ("""  if (pos < size) {
    uint64_t x = xor_tail(before ? before + pos : NULL, after + pos, size - pos);
    if (x)
      word(&s, pos, x);
  }
""", ""), "skips the last size % 8 bytes (only whole words are compared)")
m(20, 'tail_off_by_one', D, ("after + pos, size - pos);", "after + pos, size - pos - 1);"),
  "compares one byte too few of the tail, so a change in the page's last byte is missed when size % 8 != 0")
m(20, 'no_close', D, ("""  if (s.end != 0)
    emit(&s);               /* close the last range */
""", ""), "never closes the range still open at the end: the last range is lost")
m(20, 'close_always', D, ("""  if (s.end != 0)
    emit(&s);               /* close the last range */
""", """  emit(&s);               /* close the last range */
"""), "closes a range at the end even when nothing changed: an empty range [0, 0)")
m(20, 'count_capped', D, ("  return s.count;\n", "  return s.count < max ? s.count : max;\n"),
  "returns how many ranges were written (at most max), not how many there are")
m(20, 'null_whole_page', D, ("""  } else {
    /* Against a zero page: a separate loop keeps the common case free of
     * a per-word NULL test. */
    for (pos = 0; pos < full; pos += 8) {
      uint64_t x = xor_word(NULL, after + pos);
      if (x)
        word(&s, pos, x);
    }
  }""", """  } else {
    /* Against a zero page: ship the whole page. */
    if (max)
      out[0] = (struct drange){0, size, 0, 0};
    return 1;
  }"""), "against a zero page (before NULL) ships the whole page as one range")

S = 'src/node/segment.c'
m(21, 'if_for_while', S, ("  while (k < s->npend && s->pend[k].prev == s->scl)",
                          "  if (k < s->npend && s->pend[k].prev == s->scl)"),
  "moves the SCL one record at a time (if for while): a record that fills a hole does not pull up the records waiting behind it")
m(21, 'no_dedup', S, ("""  if (i < s->npend && s->pend[i].lsn == lsn)
    return s->scl;
""", ""), "holds a second copy of a record already waiting: the chain's walk stops at the copy")
m(21, 'no_below_scl', S, ("""  if (lsn <= s->scl)
    return s->scl;
""", ""), "holds a record at or below the SCL again (one already passed)")
m(21, 'append_unsorted', S, ("  size_t i = pend_find(s, lsn);\n",
                             "  size_t i = pend_find(s, lsn);\n  if (!(i < s->npend && s->pend[i].lsn == lsn))\n    i = s->npend;\n"),
  "appends a new record at the end of pend[] instead of its place by LSN")
m(21, 'max_is_last', S, ("""  if (lsn > s->max_lsn)
    s->max_lsn = lsn;
""", """  s->max_lsn = lsn;
"""), "max_lsn becomes the last record added, not the highest")
m(21, 'no_drop', S, ("""    memmove(s->pend, &s->pend[k], (s->npend - k) * sizeof *s->pend);
    s->npend -= k;
""", """    memmove(s->pend, &s->pend[k], (s->npend - k) * sizeof *s->pend);
    s->npend -= k - 1;
"""), "drops one record too few from pend[] once the SCL passed them (off by one)")

Q = 'src/vfs/quorum.c'
m(22, 'lal_off_by_one', Q, ("  return q->next_lsn + n <= base + q->lal + 1;",
                            "  return q->next_lsn + n <= base + q->lal;"),
  "hands out one LSN fewer than the LAL allows")
m(22, 'lal_ignores_floor', Q, ("  uint64_t base = q->vdl > q->floor ? q->vdl : q->floor;",
                               "  uint64_t base = q->vdl;"),
  "measures the LAL from the VDL only, not from the end of the last truncation")
m(22, 'lal_past_limit', Q, ("  return q->next_lsn + n <= base + q->lal + 1;",
                            "  return q->next_lsn <= base + q->lal;"),
  "checks only the first of the n LSNs against the LAL, not the last")
m(22, 'if_for_while', Q, ("""  while (q->n > 0) {
    struct qrec *r = &q->q[q->head];
    if (member_positions(r->acks, q_trans(q, r->pg)) < q->vw)
      break;
""", """  if (q->n > 0 && member_positions(q->q[q->head].acks, q_trans(q, q->q[q->head].pg)) >= q->vw) {
    struct qrec *r = &q->q[q->head];
"""),
  "pops at most one record per call (if for while): a late ack does not release the records behind it")
m(22, 'vdl_not_cpl', Q, ("""    if (r->cpl)
      q->vdl = r->lsn;""", """    q->vdl = r->lsn;"""),
  "moves the VDL to every popped record, not only to CPLs (an MTR's middle becomes durable)")
m(22, 'quorum_three', Q, ("    if (member_positions(r->acks, q_trans(q, r->pg)) < q->vw)",
                          "    if (member_positions(r->acks, q_trans(q, r->pg)) < q->vw - 1)"),
  "counts one ack fewer than the write quorum as durable (3 of 6)")
m(22, 'ignores_transition', Q, ("    if (member_positions(r->acks, q_trans(q, r->pg)) < q->vw)",
                                "    if (member_positions(r->acks, 0) < q->vw)"),
  "counts a position in transition by its current segment alone (member.h M1): a record its next segment lacks is durable")
m(22, 'no_wrap', Q, ("    q->head = (q->head + 1) % q->cap;", "    q->head = q->head + 1;"),
  "moves the ring's head without wrapping it at the end of the ring")

C = 'src/vfs/cache.c'
m(23, 'evicts_above_vdl', C, ("      } else if (c->lsn <= vdl) {", "      } else {"),
  "evicts a page whose LSN is above the VDL")
m(23, 'vdl_off_by_one', C, ("      } else if (c->lsn <= vdl) {", "      } else if (c->lsn < vdl) {"),
  "keeps a page whose LSN is exactly the VDL (off by one)")
m(23, 'no_second_chance', C, ("""      if (c->used) {
        c->used = 0;           /* a second chance */
      } else if""", """      c->used = 0;
      if"""), "ignores the used bit: no second chance")
m(23, 'one_sweep', C, ("found < want && steps < 2 * n;", "found < want && steps < n;"),
  "sweeps once: when every page is used, the first sweep only clears bits and nothing goes")
m(23, 'hand_from_zero', C, ("  for (size_t steps = 0; found < want && steps < 2 * n; steps++) {",
                            "  m->hand = 0;\n  for (size_t steps = 0; found < want && steps < 2 * n; steps++) {"),
  "starts every sweep at entry 0 instead of where the hand stopped")
m(23, 'keeps_used_bit', C, ("        c->used = 0;           /* a second chance */\n", "        ;\n"),
  "never clears the used bit: a used page is never evicted")

G = 'src/node/gossip.c'
m(24, 'records_first', G, ("""  if (node_truncate_pb(n, s, gp->truncs, gp->n_truncs, TP_GOSSIP, why, sizeof why) != 0) {
    logwarn_rl("gossip: %s", why);
    return;
  }
  if (gp->n_records == 0)
    return;
  uint32_t added, dups;
  if (node_stage(n, s, gp->records, gp->n_records, 0, &added, &dups, why, sizeof why) != 0) {
    logwarn_rl("gossip: %s", why);
    return;
  }
""", """  uint32_t added = 0, dups;
  if (gp->n_records &&
      node_stage(n, s, gp->records, gp->n_records, 0, &added, &dups, why, sizeof why) != 0) {
    logwarn_rl("gossip: %s", why);
    return;
  }
  if (node_truncate_pb(n, s, gp->truncs, gp->n_truncs, TP_GOSSIP, why, sizeof why) != 0) {
    logwarn_rl("gossip: %s", why);
    return;
  }
"""), "stages the records first, then installs the truncations")
m(24, 'no_truncs', G, ("""  if (node_truncate_pb(n, s, gp->truncs, gp->n_truncs, TP_GOSSIP, why, sizeof why) != 0) {
    logwarn_rl("gossip: %s", why);
    return;
  }
""", ""), "ignores the peer's truncations, merges only its records")
m(24, 'truncs_only', G, ("""  if (gp->n_records == 0)
    return;
""", """  if (gp->n_truncs || gp->n_records == 0)
    return;
"""), "a push that carries truncations has its records ignored")
m(24, 'only_when_behind', G, ("""  char why[256];
""", """  char why[256];
  if (gp->scl <= s->scl)
    return;                 /* the peer is no further along */
"""), "ignores a push from a peer whose SCL is not above its own (records above a hole are lost)")
m(24, 'strict_stage', G, ("gp->records, gp->n_records, 0, &added", "gp->records, gp->n_records, 1, &added"),
  "stages the records strictly, as a writer's batch: one it refuses stops the whole push")
m(24, 'one_record', G, ("gp->records, gp->n_records, 0, &added", "gp->records, 1, 0, &added"),
  "merges only the first record of a push")

R = 'src/vfs/recovery.c'
O = 'src/vfs/rcvadopt.c'
m(25, 'ignores_truncations', R, ("""r->pg >= npgs ||
        trunc_cuts(tr, ntr, r->lsn, r->epoch))""", """r->pg >= npgs)"""),
  "follows the chains through records a known truncation cut")
m(25, 'lowest_epoch_copy', R, ("if ((i > 0 && recs[i - 1].lsn == r->lsn) ||",
                               "if ((i + 1 < n && recs[i + 1].lsn == r->lsn) ||"),
  "of several copies of one LSN counts the lowest epoch's, not the highest")
m(25, 'no_whole_check', R, ("""      whole = next->mtr_pg[j] < npgs && at >= 0 && on[at] &&
              recs[at].pg == next->mtr_pg[j];""", """      whole = next->mtr_pg[j] < npgs && at >= 0;"""),
  "counts an MTR whose last record in another PG is held but not on that PG's chain (not whole)")
m(25, 'adopt_above_vdl', R, ("  for (size_t i = 0; i < n && recs[i].lsn <= vdl; i++)",
                             "  for (size_t i = 0; i < n; i++)"),
  "adopts every chained record, also those above the VDL, and sets the tails past it")
m(25, 'jumps_holes', R, ("    if (r->prev == reach[r->pg]) {", "    if (r->prev >= reach[r->pg]) {"),
  "extends a PG's chain with a record whose backlink is at or past its end: it jumps holes")
m(25, 'tails_at_chain_end', R, ("""    if (on[i]) {
      recs[i].adopt = 1;
      if (tails)
        tails[recs[i].pg] = recs[i].lsn;
    }""", """    if (on[i])
      recs[i].adopt = 1;
  if (tails)
    for (size_t k = 0; k < npgs; k++)
      tails[k] = reach[k];"""),
  "sets each PG's tail to the end of its chain, not its last record at or below the VDL")
m(25, 'ignores_trunc_to', O, ("  uint64_t base = c->vdl > c->trunc_to ? c->vdl : c->trunc_to;",
                              "  uint64_t base = c->vdl;"),
  "truncates from the VDL only, ignoring an earlier truncation's end (c->trunc_to)")
m(25, 'trunc_to_only', O, ("  uint64_t base = c->vdl > c->trunc_to ? c->vdl : c->trunc_to;",
                           "  uint64_t base = c->trunc_to ? c->trunc_to : c->vdl;"),
  "measures from an earlier truncation's end whenever there is one, even below the VDL")
m(25, 'truncates_clean', O, ("  c->to = c->clean || PLANTED(BUG_NO_TRUNC) ? c->vdl : base + LAL;",
                             "  c->to = PLANTED(BUG_NO_TRUNC) ? c->vdl : base + LAL;"),
  "truncates a clean volume too")

def body_span(text, lab):
    spans = [(mm.start(), text.index('/* LAB %d END */' % lab, mm.start()))
             for mm in re.finditer(r'/\* LAB %d BEGIN' % lab, text)]
    return spans

only = set(sys.argv[2:])
for lab, name, f, edits, what in M:
    if only and name not in only: continue
    src = open(os.path.join(ROOT, f)).read()
    out = src
    spans = body_span(src, lab)
    for old, new in edits:
        assert out.count(old) == 1, (name, old)
        at = src.index(old)
        assert any(a < at < b for a, b in spans), (name, 'outside the body')
        out = out.replace(old, new)
    d = os.path.join(ROOT, 'labs/mutants/lab%02d' % lab)
    os.makedirs(d, exist_ok=True)
    with tempfile.NamedTemporaryFile('w', suffix='.c', delete=False) as t:
        t.write(out)
    p = subprocess.run(['diff', '-u', '--label', 'a/' + f, '--label', 'b/' + f,
                        os.path.join(ROOT, f), t.name], capture_output=True, text=True)
    os.unlink(t.name)
    with open(os.path.join(d, name + '.patch'), 'w') as o:
        o.write('mutant %s of lab %d: %s\n\n' % (name, lab, what))
        o.write(p.stdout)
    print(lab, name, f)
