/* The program whose debug information tests/runtime/dwarf_lies.awk turns
 * into lies (probes_uprobe_dwarf_lies.test): typedef loop_t and the type
 * of pp end up referring to themselves, member `far` of struct big sits
 * at 0x40000000, member `beyond` of struct small at offset 6, past the
 * end of its 8 bytes, and int[2] has 0x80000000 elements. `./lies` calls
 * f once. */
typedef int loop_t;
struct big {
  int a;
  int far;
};
struct small {
  int x;
  int beyond;
};

__attribute__((noinline, used)) int f(struct big *s, struct small *m,
                                      int (*arr)[2], loop_t *l,
                                      loop_t **pp) {
  __asm__ volatile("" ::: "memory");
  return s->a + m->x + (*arr)[0] + *l + (pp != 0);
}

int main(void) {
  struct big b = {1, 2};
  struct small m = {5, 6};
  loop_t x = 3;
  int two[2] = {0, 0};
  return f(&b, &m, &two, &x, 0) != 9;
}
