// Target of the uprobe cpp qualifier test: two overloads of one method, a
// method of its own and a C function, each called twice.
namespace MyApp {
struct Server {
  __attribute__((noinline)) int handle_request(int fd) {
    asm volatile("" ::: "memory");
    return fd + 1;
  }
  __attribute__((noinline)) int handle_request(double d) {
    asm volatile("" ::: "memory");
    return (int)d + 2;
  }
  __attribute__((noinline)) int close_all() {
    asm volatile("" ::: "memory");
    return 7;
  }
};
}  // namespace MyApp

extern "C" __attribute__((noinline)) int plain_c(int x) {
  asm volatile("" ::: "memory");
  return x * 2;
}

int main() {
  MyApp::Server s;
  int r = 0;
  for (int i = 0; i < 2; i++)
    r += s.handle_request(i) + s.handle_request(1.5) + s.close_all() +
         plain_c(i);
  return r == 0;
}
