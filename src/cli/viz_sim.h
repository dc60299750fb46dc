/*
 * viz_sim.h: what the reading and replay of a simulator trace (viz_sim.c)
 * hands the drawing of its timeline (viz_simdraw.c). Internal to those
 * two; `auralog viz --sim-trace` enters through viz_sim_dot (viz.h).
 *
 * The replay cuts the window into at most VS_COLS columns of one round
 * width and keeps, per column, each host's worst state, its marks (crash,
 * "e2 recovers" ...), the watermarks at the column's end (a writer's VDL
 * and epoch; a segment's SCL and the highest LSN it holds, above a hole
 * when higher), the reads each reader finished and the messages. The
 * drawing then keeps only the columns where something changed.
 */
#ifndef AURALOG_VIZ_SIM_H
#define AURALOG_VIZ_SIM_H

#include <stdio.h>

#define VS_COLS   40      /* time columns at most */
#define VS_L      32      /* lanes: writers and storage nodes */
#define VS_PG     8       /* PGs drawn per node */
#define VS_RD     4       /* readers: the writers and the replica */
#define VS_CUTS   128     /* pair cuts in force at once */
#define VS_SPANS  256     /* faults drawn */
#define VS_MARKS  6       /* marks in one cell before "..." */

/* Colours the replay's marks and the drawing share. */
#define C_BEHIND "#fdd49e"
#define C_VIOL   "#d7301f"
#define C_FNODE  "#c6dbef"   /* faults that take nodes down */
#define C_FNET   "#fdd0a2"   /* faults of the network */
#define C_FWR    "#dadaeb"   /* faults of the writer */
#define C_FHEAL  "#c7e9c0"
#define C_RED    "#b2182b"
#define C_GREEN  "#1a9850"
#define C_HOLE   "#a6dcef"   /* a segment holds records above a hole */
#define C_WRONG  "#fcbba1"   /* a read the model disagrees with */

typedef unsigned long long ull;

enum { R_NET, R_VDL, R_SCL, R_EV, R_READ };
/* What an ev line says (E_OTHER: a text drawn nowhere). */
enum { E_OTHER, E_VIOL, E_FAULT, E_SKIP, E_FINAL, E_HEALS, E_NCRASH, E_NRESTART, E_WSTART,
       E_WCRASH, E_RECOVERS, E_SERVES, E_RFAIL, E_FENCED };
/* A lane's state, and its colour (s_fill); a cell shows the worst its
 * column saw. */
enum { S_IDLE, S_UP, S_RECOV, S_CUT, S_FENCED, S_DOWN };
/* Where the run first left the model, as the violation's words say. */
enum { D_NONE, D_SEG, D_READ, D_ACK };

/* A trace line. ev: text, its fault name or its whole text; read: a the
 * reader, x the page, y the read point, z the page's LSN, sub 1 if wrong;
 * scl: x the PG, y the SCL, z the highest LSN held. */
struct rec { ull t, x, y, z; unsigned char type, sub; short a, b; char *text; };
struct lane { char name[16]; int writer; char az; };
struct span { ull t0, t1, dur; const char *name; int kind, open, c0, c1, row; };

struct diverge {
  int kind, lane, pg, col;      /* col: in the window, or -1 */
  ull t, lsn;
  long rec;                     /* D_READ: the wrong read's line */
};

struct vs {
  struct rec *r;                /* the trace; viol: its first VIOLATION, or -1 */
  size_t n, cap, nviol;
  long viol;
  struct lane lane[VS_L];
  int nlanes, npg;
  char reader[VS_RD][8];
  int nrd;
  ull last, from, to, step;     /* the last time; the window, its column width */
  int ncols, vcol;
  struct diverge d;
  unsigned char st[VS_L];       /* the replay's state now */
  ull val[VS_L][VS_PG];         /* writer: [0] VDL, [1] epoch; node: SCL per PG */
  ull mx[VS_L][VS_PG];          /* node: the highest LSN held per PG */
  int hosted[VS_L][VS_PG];      /* node: 1 + the column of its first SCL line for the PG
                                   (0: none yet): a spare hosts a PG only once a repair
                                   moved one of its segments there (sim/member.c) */
  short cut[VS_CUTS][2];
  int ncut, nspan;
  unsigned azcut;               /* bit c - 'A': AZ c is partitioned */
  struct span span[VS_SPANS];
  unsigned char worst[VS_L][VS_COLS], nmark[VS_L][VS_COLS];   /* per column */
  char mark[VS_L][VS_COLS][(VS_MARKS + 1) * 128];
  ull end[VS_L][VS_PG][VS_COLS], endmx[VS_L][VS_PG][VS_COLS], best0[VS_PG][VS_COLS];
  unsigned msgs[3][VS_COLS];    /* delivered; dropped or lost; duplicated or bad */
  unsigned nreads[VS_RD][VS_COLS];
  ull rplo[VS_RD][VS_COLS], rphi[VS_RD][VS_COLS];
  long rbad[VS_RD][VS_COLS];    /* the first wrong read's line + 1, or 0 */
};

extern const char *const s_fill[];

/* Replay the trace into v's columns (viz_sim.c). */
void vs_replay(struct vs *v);
/* The DOT text of v's timeline, replayed (viz_simdraw.c); path names it. */
char *vs_draw(struct vs *v, const char *path);
/* An LSN as it is drawn: below a million as is, above as "10M+172"
 * (recoveries' truncations jump LSNs by millions; the last digits are
 * what moves). buf of 32. */
const char *vs_lsn(ull lsn, char *buf);
/* Text for an HTML-like label: & < > " escaped. */
void vs_html(FILE *f, const char *s);

#endif
