/* The program the macaddr test traces: `./nettarget` calls
 * take_frame(&f) once, f.mac being 02:42:ac:11:00:ff. */
#include <string.h>

struct frame {
  const char *name;
  unsigned char mac[6];
};

__attribute__((noinline)) int take_frame(struct frame *f) {
  __asm__ volatile("" ::: "memory");   /* keep the call and its body */
  return f->mac[0];
}

int main(void) {
  struct frame f = {"eth0", {0x02, 0x42, 0xac, 0x11, 0x00, 0xff}};
  return take_frame(&f) == 2 ? 0 : 1;
}
