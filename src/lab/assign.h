/*
 * lab/assign.h: each student's assignment in an observe lab (which AZ,
 * which node), derived from the student's id (lab/assign.c).
 */
#ifndef AURALOG_LAB_ASSIGN_H
#define AURALOG_LAB_ASSIGN_H

#include <stddef.h>

#define STUDENT_MAX 64

struct assign {
  int lab;
  char az;                     /* the AZ to take out or partition; 0: none */
  char node[3];                /* lab 2: the one more node of AZ+1 */
  char slow[3];                /* lab 2: the node to slow */
  int row, count;              /* lab 1: update row `row` of lab01 `count` times;
                                * lab 5: rows the second writer commits */
  int pos, drain_pos;          /* lab 11: the positions of pg 0 whose nodes to lose and to
                                * drain (a position outlives its nodes: a retry finds it) */
  int mttf_h;                  /* lab 11: each node's mean time to failure, hours */
  char table[24];              /* lab 12: the table to fill and drop (count: its rows);
                                * lab 13: the table to commit count transactions into */
};

int student_id_ok(const char *s);
int assign_make(const char *student, int lab, struct assign *a);
void assign_text(const struct assign *a, char *out, size_t n);

#endif
