/* The program lang_deref_integer.test traces: f gets the addresses of a
 * 64-bit integer and of a char pointer, as integers in registers. */
#include <stdint.h>
int64_t g = -0x1234567890;
char name[] = "hello-deref";
char *namep = name;
__attribute__((noinline)) int f(int64_t *p, char **s) {
  return (int)(*p & 1) + (**s == 'h');
}
int main(void) { return f(&g, &namep) == 1 ? 0 : 1; }
