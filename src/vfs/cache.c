/*
 * cache.c: pages by number (see cache.h).
 *
 * A hash index (linear probing, deletion by backward shift) over an
 * unordered array of entries; deleting moves the last entry into the hole
 * and fixes its index slot.
 */
#include <stdlib.h>
#include <string.h>

#include "vfs/cache.h"

static size_t slot_of(const struct pagemap *m, uint32_t page_no)
{
  /* Fibonacci hashing: the high bits of the product are well mixed even
   * for page numbers with many low zero bits. */
  return (size_t)(((uint64_t)page_no * 0x9E3779B97F4A7C15ull) >> 32) & (m->nidx - 1);
}

/* The index slot holding page_no, or the empty slot where it would go. */
static size_t find(const struct pagemap *m, uint32_t page_no)
{
  size_t i = slot_of(m, page_no);
  while (m->idx[i] && m->e[m->idx[i] - 1].page_no != page_no)
    i = (i + 1) & (m->nidx - 1);
  return i;
}

static void rehash(struct pagemap *m, size_t nidx)
{
  free(m->idx);
  m->nidx = nidx;
  m->idx = calloc(nidx, sizeof *m->idx);
  if (m->idx == NULL)
    abort();
  for (size_t k = 0; k < m->n; k++)
    m->idx[find(m, m->e[k].page_no)] = (uint32_t)k + 1;
}

void pm_init(struct pagemap *m, uint32_t page_size)
{
  memset(m, 0, sizeof *m);
  m->page_size = page_size;
  rehash(m, 64);
}

void pm_clear(struct pagemap *m)
{
  for (size_t k = 0; k < m->n; k++) {
    free(m->e[k].data);
    free(m->e[k].before);
  }
  m->n = 0;
  m->hand = 0;
  memset(m->idx, 0, m->nidx * sizeof *m->idx);
}

void pm_free(struct pagemap *m)
{
  pm_clear(m);
  free(m->e);
  free(m->idx);
  memset(m, 0, sizeof *m);
}

struct cpage *pm_get(struct pagemap *m, uint32_t page_no)
{
  size_t i = find(m, page_no);
  if (m->idx[i] == 0)
    return NULL;
  struct cpage *c = &m->e[m->idx[i] - 1];
  c->used = 1;
  return c;
}

struct cpage *pm_put(struct pagemap *m, uint32_t page_no)
{
  struct cpage *c = pm_get(m, page_no);
  if (c)
    return c;
  if (2 * (m->n + 1) >= m->nidx)
    rehash(m, 2 * m->nidx);
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 64;
    m->e = realloc(m->e, m->cap * sizeof *m->e);
    if (m->e == NULL)
      abort();
  }
  c = &m->e[m->n];
  memset(c, 0, sizeof *c);
  c->page_no = page_no;
  c->data = calloc(1, m->page_size);
  if (c->data == NULL)
    abort();
  c->used = 1;
  m->idx[find(m, page_no)] = (uint32_t)++m->n;
  return c;
}

void pm_del(struct pagemap *m, uint32_t page_no)
{
  size_t i = find(m, page_no);
  if (m->idx[i] == 0)
    return;
  size_t k = m->idx[i] - 1;
  free(m->e[k].data);
  free(m->e[k].before);
  /* Backward-shift deletion keeps every probe chain unbroken. */
  m->idx[i] = 0;
  for (size_t j = (i + 1) & (m->nidx - 1); m->idx[j]; j = (j + 1) & (m->nidx - 1)) {
    uint32_t v = m->idx[j];
    m->idx[j] = 0;
    m->idx[find(m, m->e[v - 1].page_no)] = v;
  }
  /* Move the last entry into the hole. */
  size_t last = --m->n;
  if (k != last) {
    m->e[k] = m->e[last];
    m->idx[find(m, m->e[k].page_no)] = (uint32_t)k + 1;
  }
  if (m->hand > m->n)
    m->hand = 0;
}

size_t pm_evict(struct pagemap *m, size_t limit, uint64_t vdl)
{
  /* LAB 23 BEGIN: the eviction rule (§4.2.3). Evict pages until at most
   * limit are left, choosing by a clock over m->e from m->hand: a page
   * with its used bit set loses the bit and stays (a second chance). A
   * page whose lsn is above vdl must never go: storage could not give
   * that version back yet. Stop when nothing more may go. Return how
   * many went (pm_del removes one; it moves entries, mind the hand).
   * stub: (void)m;
   * stub: (void)limit;
   * stub: (void)vdl;
   * stub: return 0;
   */
  if (m->n <= limit)
    return 0;
  /* Choose the victims first, then delete them: deleting moves entries,
   * which would let the hand meet a page twice in one sweep. At most two
   * sweeps: the first may only clear used bits. */
  size_t n = m->n, want = n - limit, found = 0;
  uint32_t *victims = malloc(want * sizeof *victims);
  uint8_t *marked = calloc(n, 1);
  if (victims == NULL || marked == NULL)
    abort();
  for (size_t steps = 0; found < want && steps < 2 * n; steps++) {
    if (m->hand >= n)
      m->hand = 0;
    struct cpage *c = &m->e[m->hand];
    if (!marked[m->hand]) {
      if (c->used) {
        c->used = 0;           /* a second chance */
      } else if (c->lsn <= vdl) {
        marked[m->hand] = 1;
        victims[found++] = c->page_no;
      }                        /* else: not durable yet, must stay (§4.2.3) */
    }
    m->hand++;
  }
  for (size_t i = 0; i < found; i++)
    pm_del(m, victims[i]);
  free(victims);
  free(marked);
  return found;
  /* LAB 23 END */
}

static int by_page(const void *a, const void *b)
{
  uint32_t x = (*(struct cpage *const *)a)->page_no;
  uint32_t y = (*(struct cpage *const *)b)->page_no;
  return x < y ? -1 : x > y;
}

struct cpage **pm_sorted(struct pagemap *m)
{
  struct cpage **v = malloc((m->n + 1) * sizeof *v);
  for (size_t k = 0; k < m->n; k++)
    v[k] = &m->e[k];
  qsort(v, m->n, sizeof *v, by_page);
  return v;
}
