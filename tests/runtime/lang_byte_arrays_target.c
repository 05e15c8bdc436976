/* The program lang_byte_arrays.test traces: take_bytes(p) gets a struct
 * whose arrays of plain char, unsigned char, signed char and uint8_t hold
 * known bytes; only plain char is text. */
#include <stdint.h>

struct bytes {
  char text[4];
  unsigned char uc[4];
  signed char sc[4];
  uint8_t u8[4];
};

__attribute__((noinline)) int take_bytes(struct bytes *p) {
  __asm__ volatile("" ::: "memory");   /* keep the call */
  return p->u8[0];
}

int main(void) {
  struct bytes b = {"abc", {1, 2, 3, 250}, {-1, -2, 3, 4},
                    {0x11, 0x22, 0x33, 0x44}};
  return take_bytes(&b) == 0;
}
