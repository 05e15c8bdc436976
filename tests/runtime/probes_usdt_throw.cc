// The program the libstdc++ usdt test traces: throws and catches one
// std::runtime_error per round (`./throw N`), printing nothing.
#include <cstdlib>
#include <stdexcept>

__attribute__((noinline)) static void fail_at(int i) {
  throw std::runtime_error("round " + std::to_string(i));
}

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 2;
  int caught = 0;
  for (int i = 0; i < n; i++) {
    try {
      fail_at(i);
    } catch (const std::runtime_error &) {
      caught++;
    }
  }
  return caught == n ? 0 : 1;
}
