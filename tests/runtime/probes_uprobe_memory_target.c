/* The program the uprobe user-memory tests trace: `./memprog N` calls, for
 * i = 0 .. N-1, functions that take pointers into its own memory, so a
 * probe can only see the values by reading user memory:
 *   mem_int(p)       p points to three ints: 10*i, 10*i+1, 10*i+2
 *   mem_rec(r)       r->id = i, r->vals = {i, 2i, 3i, 4i}, r->name = "rec",
 *                    r->next points to a second record (id 100+i, "next")
 *   mem_ptrptr(pp)   *pp points to a long holding 1000+i
 *   mem_rec_ret(i)   returns a pointer to the record mem_rec saw */
#include <stdlib.h>

struct mem_rec {
  int id;
  int vals[4];
  const char *name;
  struct mem_rec *next;
};

__attribute__((noinline)) int mem_int(int *p) {
  __asm__ volatile("" ::: "memory");   /* keep the call and its body */
  return p[0];
}

__attribute__((noinline)) int mem_rec(struct mem_rec *r) {
  __asm__ volatile("" ::: "memory");
  return r->id;
}

__attribute__((noinline)) long mem_ptrptr(long **pp) {
  __asm__ volatile("" ::: "memory");
  return **pp;
}

static struct mem_rec *last;

__attribute__((noinline)) struct mem_rec *mem_rec_ret(int i) {
  __asm__ volatile("" ::: "memory");
  return i >= 0 ? last : NULL;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  long sum = 0;
  /* Everything lives on the stack, whose pages are touched: a probe
   * cannot fault pages in. */
  char name[] = "rec", next_name[] = "next";
  for (int i = 0; i < n; i++) {
    int ints[3] = {10 * i, 10 * i + 1, 10 * i + 2};
    struct mem_rec second = {100 + i, {0, 0, 0, 0}, next_name, NULL};
    struct mem_rec r = {i, {i, 2 * i, 3 * i, 4 * i}, name, &second};
    long value = 1000 + i, *pvalue = &value;
    last = &r;
    sum += mem_int(ints) + mem_rec(&r) + mem_ptrptr(&pvalue);
    sum += mem_rec_ret(i)->id;
  }
  return sum == -1;
}
