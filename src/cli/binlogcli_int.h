/*
 * binlogcli_int.h: what the `auralog binlog` subcommands share
 * (binlogcli.c: tail, apply; blstatus.c: status, forget): the volume and
 * the cluster they read, and opening the stream.
 */
#ifndef AURALOG_BINLOGCLI_INT_H
#define AURALOG_BINLOGCLI_INT_H

#include "cli/blread.h"

/* What every subcommand shares: the volume, the cluster. */
struct common {
  const char *volume, *coord;
  const char *file;          /* --binlog-file: the community binlog's file */
};

#define COMMON_HELP \
  "  --volume NAME  the volume (default main)\n" \
  "  --dir DIR      the cluster in DIR (default $AURALOG_DIR or ~/.auralog)\n" \
  "  --coord ADDR   the coordinator (default $AURALOG_COORD, or the cluster's)\n" \
  "  --binlog-file PATH  the community binlog (engine --binlog community): read\n" \
  "                 the engine's file, not the storage tier (no --name there)\n"


void bl_common_opt(struct common *c, int o);
void bl_common_check(const char *cmd, struct common *c);
/* bl_open (or bl_open_file), or the command ends with why. */
void bl_open_or_die(const char *cmd, struct blsrc *b, struct common *c);

int bl_status_main(int argc, char **argv);
int bl_forget_main(int argc, char **argv);

#endif
