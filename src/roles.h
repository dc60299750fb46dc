/*
 * roles.h: the subcommands of the auralog binary (dispatched by main.c).
 * Each takes the arguments after its name and returns the exit status.
 */
#ifndef AURALOG_ROLES_H
#define AURALOG_ROLES_H

int coord_main(int argc, char **argv);
int node_main(int argc, char **argv);
int node_admin_main(int argc, char **argv);
int cluster_main(int argc, char **argv);
int status_main(int argc, char **argv);
int backup_main(int argc, char **argv);   /* cli/backupcli.c */
int restore_main(int argc, char **argv);
int journal_main(int argc, char **argv);   /* cli/journalcli.c */
int bench_main(int argc, char **argv);
int engine_main(int argc, char **argv);
int replica_main(int argc, char **argv);
int sql_main(int argc, char **argv);
int fault_main(int argc, char **argv);
int failover_main(int argc, char **argv);
int failover_bench_main(int argc, char **argv);
int viz_main(int argc, char **argv);
int lab_main(int argc, char **argv);
int sim_main(int argc, char **argv);
int binlog_main(int argc, char **argv);   /* cli/binlogcli.c */

#endif
