/* The symbols the specs fuzz_usdt_args.c parses can name (sym(%rip),
 * sym+N): a small object of its own, built beside the harness, so that
 * each input's symbol index is built from a few symbols and not from
 * the harness's own tens of thousands (which took most of its time). */
long fuzz_usdt_symbol = 1;
long fuzz_usdt_other = 2;
static long fuzz_usdt_local = 3;
long *fuzz_usdt_keep = &fuzz_usdt_local;
char fuzz_usdt_array[64];
int fuzz_usdt_fn(void) { return 0; }
