/*
 * sqlwords.c: the first words of a SQL text's statements (see
 * sqlwords.h).
 */
#include <ctype.h>
#include <string.h>

#include "cli/sqlwords.h"

/* The first word of each statement in text (blanks, comments and quoted
 * text skipped; an empty statement has none), upper-cased, to f, with the
 * text that follows it. */
static void each_first_word(const char *text,
                            void (*f)(const char *w, const char *rest, void *arg), void *arg)
{
  const char *p = text;
  int at_start = 1;
  while (*p) {
    if (isspace((unsigned char)*p)) {
      p++;
    } else if (p[0] == '-' && p[1] == '-') {
      p += strcspn(p, "\n");
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      p = e ? e + 2 : p + strlen(p);
    } else if (*p == ';') {
      at_start = 1;
      p++;
    } else if (*p == '\'' || *p == '"' || *p == '`' || *p == '[') {
      if (at_start)
        f("", p, arg);         /* a statement that starts quoted: no word we know */
      char close = *p == '[' ? ']' : *p;
      const char *e = strchr(p + 1, close);
      p = e ? e + 1 : p + strlen(p);
      at_start = 0;
    } else if (at_start) {
      char w[16];
      size_t k = 0;
      for (; isalpha((unsigned char)*p); p++)
        if (k + 1 < sizeof w)
          w[k++] = (char)toupper((unsigned char)*p);
      w[k] = 0;
      if (k == 0)
        p++;
      f(w, p, arg);
      at_start = 0;
    } else {
      p++;
    }
  }
}

struct ro { int ro, txn_words; };

static void ro_word(const char *w, const char *rest, void *arg)
{
  (void)rest;
  struct ro *x = arg;
  static const char *const reads[] = {"SELECT", "VALUES", "EXPLAIN", NULL};
  static const char *const txn[] = {"BEGIN", "COMMIT", "END", "ROLLBACK", NULL};
  int ok = 0;
  for (int i = 0; reads[i]; i++)
    ok |= strcmp(w, reads[i]) == 0;
  for (int i = 0; txn[i] && x->txn_words; i++)
    ok |= strcmp(w, txn[i]) == 0;
  x->ro &= ok;
}

int sql_read_only(const char *text, int txn_words)
{
  struct ro x = {1, txn_words};
  each_first_word(text, ro_word, &x);
  return x.ro;
}

/* Does the statement at rest (after ROLLBACK) roll back to a savepoint
 * ("ROLLBACK [TRANSACTION] TO ...")? Then the transaction stays open. */
static int rollback_to(const char *rest)
{
  char w[16];
  for (int words = 0; words < 2; words++) {
    while (isspace((unsigned char)*rest))
      rest++;
    size_t k = 0;
    for (; isalpha((unsigned char)*rest); rest++)
      if (k + 1 < sizeof w)
        w[k++] = (char)toupper((unsigned char)*rest);
    w[k] = 0;
    if (strcmp(w, "TO") == 0)
      return 1;
    if (strcmp(w, "TRANSACTION") != 0)
      return 0;
  }
  return 0;
}

static void txn_word(const char *w, const char *rest, void *arg)
{
  int *open = arg;
  if (!strcmp(w, "BEGIN") || !strcmp(w, "SAVEPOINT"))
    *open = 1;
  else if (!strcmp(w, "COMMIT") || !strcmp(w, "END") ||
           (!strcmp(w, "ROLLBACK") && !rollback_to(rest)))
    *open = 0;
}

int sql_txn_open(const char *text, int open)
{
  each_first_word(text, txn_word, &open);
  return open;
}
