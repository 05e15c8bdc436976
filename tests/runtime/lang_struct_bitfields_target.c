/* Target of lang_struct_bitfields.test: hands a struct of bitfields and a
 * packed struct to functions a uprobe reads them in. */
#include <stdio.h>

struct flags {
  unsigned int low : 3, mid : 7;
  short tiny : 2;
  int wide : 20, rest : 12;
};

struct __attribute__((packed)) tight {
  char tag;
  int value;
};

__attribute__((noinline)) int take_flags(struct flags *f) { return f->mid; }
__attribute__((noinline)) int take_tight(struct tight *t) { return t->value; }

int main(void) {
  struct flags f = {.low = 5, .mid = 100, .tiny = 1, .wide = 700000,
                    .rest = 4000};
  struct tight t = {.tag = 'q', .value = 123456};
  int a = take_flags(&f);
  int b = take_tight(&t);
  printf("%d %d\n", a, b);
  return 0;
}
