/*
 * proc.c: starting auralog's own processes in the background (see proc.h).
 * `auralog cluster` starts the members this way, `auralog bench` its
 * engines and subcommands.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/proc.h"

pid_t proc_spawn(const char *path, char *const argv[], const char *log, int new_session)
{
  fflush(NULL);                 /* or the child would write our buffers again */
  pid_t pid = fork();
  if (pid != 0)
    return pid;                 /* the parent, or -1 */
  if (new_session)
    setsid();
  int in = open("/dev/null", O_RDONLY);
  int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (in < 0 || out < 0)
    _exit(127);
  dup2(in, 0);
  dup2(out, 1);
  dup2(out, 2);
  close(in);
  close(out);
  /* Nothing else of the caller's: a member started from a shell, a test
   * or `cluster up` would otherwise hold the caller's pipes and sockets
   * open (a pipe a test reads never reached its end) for its whole life. */
  for (int fd = 3; fd < 1024; fd++)
    close(fd);
  unsetenv("AURALOG_COORD");
  execv(path, argv);
  _exit(127);
}
