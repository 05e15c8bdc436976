/* The unit tests' EXPECT(name, cond): counts cond in passed or failed,
 * and says which check failed and where. */
#ifndef LOUPE_UNIT_EXPECT_H
#define LOUPE_UNIT_EXPECT_H

#include <stdio.h>

static int passed, failed;

#define EXPECT(name, cond)                                               \
  do {                                                                   \
    if (cond) {                                                          \
      passed++;                                                          \
    } else {                                                             \
      failed++;                                                          \
      fprintf(stderr, "FAIL %s: %s (line %d)\n", name, #cond, __LINE__); \
    }                                                                    \
  } while (0)

#endif
