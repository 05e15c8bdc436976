/* Unit tests for sysheader: headers written to a directory of its own
 * under /tmp (given as an -I directory) and scanned; their constants as
 * C computes them (literal types, casts, unsigned arithmetic, enumerators,
 * macros naming macros), the conditionals as cpp takes them, includes
 * (quoted, nested, #include_next, a file read once), and the errors. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/sysheader.h"
#include "expect.h"

static char dir[64];

static void put(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(text, f);
  fclose(f);
}

static char why[5000];

/* The value of `name`, or INT64_MIN + 1 if it is an error, INT64_MIN if
 * nothing defines it. */
static int64_t value(const SysHeaders *h, const char *name) {
  int64_t v;
  bool uns;
  why[0] = 0;
  int r = sysheaders_constant(h, name, &v, &uns, why, sizeof why);
  return r > 0 ? v : r < 0 ? INT64_MIN + 1 : INT64_MIN;
}

static SysHeaders *read_header(const char *name, int *result) {
  const char *dirs[] = {dir};
  SysHeaders *h = sysheaders_new(dirs, 1);
  *result = sysheaders_include(h, name, (int)strlen(name), why, sizeof why);
  return h;
}

static void test_arithmetic(void) {
  put("arith.h",
      "#define NOT0U (~0U)\n"
      "#define BIG (1UL << 40)\n"
      "#define MINUS -1\n"
      "#define HEX 0x80000000\n"
      "#define OCTAL 00010000\n"
      "#define CHAR 'a'\n"
      "#define NARROW ((__u16)0x12345)\n"
      "#define SIGNED ((int)0xffffffff)\n"
      "#define USHIFT (NOT0U >> 28)\n"
      "#define SSHIFT (-1 >> 1)\n"
      "#define MIXED (5 / 2 * 2 + 7 % 3)\n"
      "#define TERNARY (1 ? 2 : 3)\n"
      "#define SHORTCUT (0 && 1 / 0)\n"
      "#define DIVZERO (1 / 0)\n"
      "#define UWRAP (0U - 1 > 0)\n"
      "#define MULTI (1 + \\\n 2) /* a comment */\n"
      "/* #define COMMENTED 1\n */\n"
      "#define STRING \"x\"\n"
      "#define FIRST 1\n#define FIRST 2\n"
      "#define UNDONE 1\n#undef UNDONE\n#define UNDONE 3\n"
      "#define GONE 1\n#undef GONE\n"
      "#define FN(x) ((x) + 1)\n#define USES_FN FN(2)\n"
      "#define LOOP_A LOOP_B\n#define LOOP_B LOOP_A\n");
  int r;
  SysHeaders *h = read_header("arith.h", &r);
  EXPECT("read", r == 1);
  EXPECT("~0U", value(h, "NOT0U") == 4294967295);
  EXPECT("1UL << 40", value(h, "BIG") == 1LL << 40);
  EXPECT("-1", value(h, "MINUS") == -1);
  EXPECT("hex unsigned int", value(h, "HEX") == 2147483648);
  EXPECT("octal", value(h, "OCTAL") == 4096);
  EXPECT("char", value(h, "CHAR") == 'a');
  EXPECT("cast narrows", value(h, "NARROW") == 0x2345);
  EXPECT("cast to int", value(h, "SIGNED") == -1);
  EXPECT("unsigned shift", value(h, "USHIFT") == 15);
  EXPECT("signed shift", value(h, "SSHIFT") == -1);
  EXPECT("precedence", value(h, "MIXED") == 5);
  EXPECT("?:", value(h, "TERNARY") == 2);
  EXPECT("&& short-circuits", value(h, "SHORTCUT") == 0);
  EXPECT("division by zero", value(h, "DIVZERO") == INT64_MIN + 1 &&
                                 strstr(why, "divides by zero"));
  EXPECT("unsigned wraps", value(h, "UWRAP") == 1);
  EXPECT("continued line", value(h, "MULTI") == 3);
  EXPECT("comment", value(h, "COMMENTED") == INT64_MIN);
  EXPECT("string", value(h, "STRING") == INT64_MIN + 1 &&
                       strstr(why, "string"));
  EXPECT("first definition", value(h, "FIRST") == 1);
  EXPECT("#undef then #define", value(h, "UNDONE") == 3);
  EXPECT("#undef", value(h, "GONE") == INT64_MIN);
  EXPECT("function-like", value(h, "FN") == INT64_MIN + 1 &&
                              strstr(why, "function-like macro"));
  EXPECT("uses a function-like macro",
         value(h, "USES_FN") == INT64_MIN + 1 &&
             strstr(why, "function-like macro 'FN'"));
  EXPECT("cycle", value(h, "LOOP_A") == INT64_MIN + 1 &&
                      strstr(why, "expands back to 'LOOP_A'"));
  EXPECT("defined", sysheaders_defined(h, "BIG", 3) &&
                        !sysheaders_defined(h, "GONE", 4));
}

static void test_enumerators(void) {
  put("enums.h",
      "enum {\n  E_ONE = 5,\n#define E_TWO E_TWO\n  E_TWO,\n"
      "  E_THREE = E_TWO + 10, /* x */ E_FOUR,\n"
      "  E_SKIP = sizeof(int), E_AFTER\n};\n"
      "typedef enum tag { T_A = 1 << 2, T_B } tag_t;\n");
  int r;
  SysHeaders *h = read_header("enums.h", &r);
  EXPECT("enum values", value(h, "E_ONE") == 5 && value(h, "E_TWO") == 6 &&
                            value(h, "E_THREE") == 16 &&
                            value(h, "E_FOUR") == 17);
  EXPECT("unknown value", value(h, "E_SKIP") == INT64_MIN &&
                              value(h, "E_AFTER") == INT64_MIN);
  EXPECT("typedef enum", value(h, "T_A") == 4 && value(h, "T_B") == 5);
}

static void test_conditionals(void) {
  put("cond.h",
      "#ifdef __KERNEL__\n#define KERN 1\n#else\n#define KERN 0\n#endif\n"
      "#if defined(__linux__) && !defined NOPE\n#define LX 1\n#endif\n"
      "#if 0\n#define ELIF 1\n#if 1\n#define NESTED 1\n#endif\n"
      "#elif UNDEFINED_NAME == 0\n#define ELIF 2\n#else\n#define ELIF 3\n"
      "#endif\n"
      "#define PREREQ(a) 1\n"
      "#if PREREQ(4)\n#define WIDTH 1\n#else\n#define WIDTH 2\n#endif\n"
      "#if WIDTH > 1\n#define HIDDEN 1\n#else\n#define HIDDEN 0\n#endif\n"
      "#define AREA (WIDTH * 2)\n"
      "#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ || "
      "__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__\n#define ORDER 1\n#endif\n");
  int r;
  SysHeaders *h = read_header("cond.h", &r);
  EXPECT("__KERNEL__ undefined", value(h, "KERN") == 0);
  EXPECT("defined()", value(h, "LX") == 1);
  EXPECT("#elif, undefined is 0", value(h, "ELIF") == 2);
  EXPECT("inside #if 0", value(h, "NESTED") == INT64_MIN);
  EXPECT("unknown condition",
         value(h, "WIDTH") == INT64_MIN + 1 && strstr(why, "condition"));
  EXPECT("what it decides", value(h, "HIDDEN") == INT64_MIN + 1);
  EXPECT("a use of it", value(h, "AREA") == INT64_MIN + 1 &&
                            strstr(why, "'WIDTH'"));
  EXPECT("byte order", value(h, "ORDER") == 1);
}

static void test_includes(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/sub", dir);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/next", dir);
  mkdir(path, 0755);
  put("outer.h", "#include \"sub/inner.h\"\n#include <outer.h>\n"
                 "#define OUTER (INNER + 1)\n");
  put("sub/inner.h", "#include \"leaf.h\"\n#define INNER (LEAF + 1)\n");
  put("sub/leaf.h", "#define LEAF 1\n");
  put("next/n.h", "#define FROM_NEXT 1\n");
  put("n.h", "#include_next <n.h>\n#define FROM_FIRST 1\n");
  const char *dirs[] = {dir, path};
  SysHeaders *h = sysheaders_new(dirs, 2);
  EXPECT("nested", sysheaders_include(h, "outer.h", 7, why, sizeof why) == 1);
  EXPECT("quoted beside", value(h, "OUTER") == 3);
  EXPECT("include_next", sysheaders_include(h, "n.h", 3, why, sizeof why) ==
                             1 && value(h, "FROM_NEXT") == 1 &&
                             value(h, "FROM_FIRST") == 1);
  EXPECT("not found", sysheaders_include(h, "none.h", 6, why, sizeof why) == 0);
  char list[256];
  int count;
  sysheaders_describe(h, true, list, sizeof list, &count);
  EXPECT("describe", count == 2 && !strcmp(list, "<outer.h>, <n.h>"));
  sysheaders_describe(h, false, list, sizeof list, &count);
  EXPECT("describe missing", count == 1 && !strcmp(list, "<none.h>"));
  snprintf(path, sizeof path, "%s/fifo.h", dir);
  mkfifo(path, 0600);
  put("infifo.h", "#include \"fifo.h\"\n");
  int r;
  read_header("infifo.h", &r);
  EXPECT("fifo", r == -1 && strstr(why, "fifo.h: not a regular file"));
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/loupe-sysheader-%d", (int)getpid());
  if (mkdir(dir, 0700) != 0) return 1;
  test_arithmetic();
  test_enumerators();
  test_conditionals();
  test_includes();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) failed++;
  printf("test_sysheader: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
