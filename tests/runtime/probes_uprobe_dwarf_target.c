/* The program the DWARF argument tests trace, built with -g: `./dwprog N`
 * calls, for i = 0 .. N-1, functions whose parameters the tests read by
 * name:
 *   dw_scalars(count, letter, big, ratio, neg)  i, 'a' + i, 1 << 40 | i,
 *                                               i / 2.0 (a double), -i
 *   dw_record(item, color)   item->id = i, item->name = "item",
 *                            item->vals = {i, 2i, 3i}, item->inner.flags
 *                            = 3 (a 2-bit field) and .next = NULL,
 *                            color = GREEN
 *   dw_small(pair, count)    pair by value: {i, 7}, count = i
 *   dw_seven(a..g)           1..7 (g is passed on the stack) */
#include <stdlib.h>

enum color { RED, GREEN, BLUE };

typedef unsigned int flags_t;

struct inner {
  flags_t flags : 2;
  flags_t other : 6;
  struct item *next;
};

struct item {
  int id;
  char name[8];
  int vals[3];
  struct inner inner;
};

struct pair {
  int x, y;
};

#define KEEP __attribute__((noinline, used))

KEEP int dw_scalars(int count, char letter, long big, double ratio,
                    short neg) {
  __asm__ volatile("" ::: "memory");
  return count + letter + (int)big + (int)ratio + neg;
}

KEEP int dw_record(struct item *item, enum color color) {
  __asm__ volatile("" ::: "memory");
  return item->id + (int)color;
}

KEEP int dw_small(struct pair pair, int count) {
  __asm__ volatile("" ::: "memory");
  return pair.x + pair.y + count;
}

KEEP long dw_seven(long a, long b, long c, long d, long e, long f, long g) {
  __asm__ volatile("" ::: "memory");
  return a + b + c + d + e + f + g;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  long sum = 0;
  for (int i = 0; i < n; i++) {
    struct item item = {i, "item", {i, 2 * i, 3 * i}, {3, 5, NULL}};
    struct pair pair = {i, 7};
    sum += dw_scalars(i, (char)('a' + i), 1L << 40 | i, i / 2.0, (short)-i);
    sum += dw_record(&item, GREEN);
    sum += dw_small(pair, i);
    sum += dw_seven(1, 2, 3, 4, 5, 6, 7);
  }
  return sum == -1;
}
