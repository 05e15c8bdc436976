/* The library builtins_usym_versioned.test traces: vfunc has two versions
 * (.symver), so its symbol table names them vfunc@LOUPE_1 and
 * vfunc@@LOUPE_2, as glibc's does clock_nanosleep@GLIBC_2.2.5. */
__attribute__((noinline)) int old_impl(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}
__asm__(".symver old_impl, vfunc@LOUPE_1");
__attribute__((noinline)) int new_impl(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 2;
}
__asm__(".symver new_impl, vfunc@@LOUPE_2");
