// Target of the C++ stack test: main -> ns::Shape::area(int) -> leaf_probe;
// then it sleeps 300 ms, so that its maps can still be read when loupe
// prints the stack.
#include <unistd.h>

extern "C" __attribute__((noinline)) int leaf_probe(int v) {
  asm volatile("" ::: "memory");
  return v + 1;
}

namespace ns {
struct Shape {
  __attribute__((noinline)) int area(int side) {
    int r = leaf_probe(side * side);
    asm volatile("" ::: "memory");
    return r;
  }
};
}  // namespace ns

int main() {
  ns::Shape s;
  int r = s.area(3);
  usleep(300 * 1000);
  return r == 0;
}
