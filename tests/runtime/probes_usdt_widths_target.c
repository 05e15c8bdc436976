/* probes_usdt_widths_target: two usdt probes whose arguments are all -1:
 * loupe:narrow as int8_t, uint8_t, int16_t, uint16_t, int32_t and
 * uint32_t, loupe:wide as int64_t and uint64_t (six arguments at most,
 * which bpftrace reads too). Built with -O0 the note puts them in
 * stack memory; with -O2, computed from argc (run with no argument), in
 * registers of their own width (%al, %ax, %eax, %rax). */
#include <stdint.h>
#include <sys/sdt.h>

int main(int argc, char **argv) {
  (void)argv;
  int64_t m = -(int64_t)argc;   /* -1 */
  int8_t a = (int8_t)m;
  uint8_t b = (uint8_t)m;
  int16_t c = (int16_t)m;
  uint16_t d = (uint16_t)m;
  int32_t e = (int32_t)m;
  uint32_t f = (uint32_t)m;
  int64_t g = m;
  uint64_t h = (uint64_t)m;
  STAP_PROBE6(loupe, narrow, a, b, c, d, e, f);
  STAP_PROBE2(loupe, wide, g, h);
  return 0;
}
