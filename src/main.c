/*
 * main.c: the auralog binary. One binary, one subcommand per role or tool
 * (DESIGN.md §6); this file only dispatches.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/keyfile.h"
#include "lib/log.h"
#include "roles.h"

struct cmd {
  const char *name;
  int (*fn)(int, char **);
  const char *what;
};

static const struct cmd cmds[] = {
  {"cluster", cluster_main, "start, stop or inspect a local cluster (coord, 6 nodes, engine)"},
  {"sql", sql_main, "run SQL on the engine (no SQL: an interactive shell)"},
  {"lab", lab_main, "the course labs: lab list, lab run N, lab check N"},
  {"fault", fault_main, "take out an AZ, a node, the engine; partition; slow a node"},
  {"failover", failover_main, "promote a read replica to writer (the coordinator fences the old one)"},
  {"status", status_main, "show the volume, VDL, PGs, segment SCLs and nodes"},
  {"backup", backup_main, "continuous backup to an object store: backup status"},
  {"restore", restore_main, "rebuild a volume as of an LSN or a time from its backup"},
  {"binlog", binlog_main, "the volume's change stream: binlog tail | apply | status"},
  {"journal", journal_main, "what happened to the cluster: faults, epochs, schema changes (ddl)"},
  {"viz", viz_main, "draw the cluster, its segments and log tail (graphviz)"},
  {"coord", coord_main, "run the coordinator (volumes, placement, epochs, membership)"},
  {"engine", engine_main, "run the database tier: SQLite on the auralog VFS"},
  {"replica", replica_main, "run a read replica: read-only SQL on the writer's volume"},
  {"node", node_main, "run a storage node; node add|drain|replace: change a cluster's nodes"},
  {"sim", sim_main, "the deterministic simulator: the whole cluster, seeded faults, checks"},
  {"bench", bench_main, "measure auralog beside SQLite: commits, recovery, replicas, repair, backup"},
};

static void usage(FILE *f)
{
  fprintf(f,
    "auralog: the storage architecture of Amazon Aurora, as a lab kit.\n"
    "\n"
    "usage: auralog COMMAND [options]   (auralog COMMAND --help for more)\n"
    "\n");
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].what);
  fprintf(f,
    "\n"
    "Start here: auralog cluster up, then auralog status.\n"
    "AURALOG_COORD sets the coordinator address (default 127.0.0.1:7400).\n"
    "Every command takes --key FILE (or AURALOG_KEY): the cluster key; by default\n"
    "cluster.key in --dir, $AURALOG_DIR or ~/.auralog, which `cluster up` creates.\n");
}

/* --key FILE (or --key=FILE), anywhere after the command: every command
 * takes it, so it is taken here, as AURALOG_KEY, which the processes a
 * command starts inherit (keyfile.h). */
static int take_key(int *argc, char **argv)
{
  for (int i = 2; i < *argc; i++) {
    const char *path = NULL;
    int n = 0;
    if (!strcmp(argv[i], "--key")) {
      if (i + 1 >= *argc) {
        errmsg("--key needs a file (the cluster key)");
        return -1;
      }
      path = argv[i + 1];
      n = 2;
    } else if (!strncmp(argv[i], "--key=", 6)) {
      path = argv[i] + 6;
      n = 1;
    } else if (!strcmp(argv[i], "--")) {
      break;
    }
    if (path) {
      char real[PATH_MAX];
      setenv("AURALOG_KEY", realpath(path, real) ? real : path, 1);
      memmove(&argv[i], &argv[i + n], (size_t)(*argc - i - n + 1) * sizeof *argv);
      *argc -= n;
      i--;
    }
  }
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
    usage(stdout);
    return 0;
  }
  if (take_key(&argc, argv) != 0)
    return 2;
  /* `bench failover` is failover's own (fobench.c), beside src/bench. */
  /* The commands a person types, and the engine they start, act for the
   * operator (keyfile.h op_use: they sign what only the operator may ask,
   * with DIR/operator.key); a node, a replica and the coordinator never
   * load that key (coord/roles.c). A promoted replica's engine turns it
   * off again (engine.c: --if-epoch). */
  static const char *const operator_cmds[] = {"cluster", "lab", "fault", "failover", "engine",
                                              "bench", "restore"};
  for (size_t i = 0; i < sizeof operator_cmds / sizeof *operator_cmds; i++)
    if (strcmp(name, operator_cmds[i]) == 0)
      op_use(1);
  if (!strcmp(name, "bench") && argc > 2 && !strcmp(argv[2], "failover"))
    return failover_bench_main(argc - 2, argv + 2);
  /* `node add|drain|replace` change a cluster's nodes (cli/nodeadm.c),
   * the operator's; `node` alone runs one. */
  if (!strcmp(name, "node") && argc > 2 &&
      (!strcmp(argv[2], "add") || !strcmp(argv[2], "drain") || !strcmp(argv[2], "replace"))) {
    op_use(1);
    return node_admin_main(argc - 2, argv + 2);
  }
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (strcmp(cmds[i].name, name) == 0)
      return cmds[i].fn(argc - 1, argv + 1);
  errmsg("unknown command '%s' (see auralog --help)", name);
  return 2;
}
