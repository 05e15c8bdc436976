/* dlib: see dlib.h. */
#include "util/dlib.h"

#include <stdio.h>

#ifdef LOUPE_STATIC

bool dlib_load(const char *const *sonames, const char *package,
               const char *const *symbols, void **fns, char *err,
               size_t errlen) {
  snprintf(err, errlen, "the static build of loupe does not load %s",
           sonames[0]);
  return false;
}

#else

#include <dlfcn.h>

bool dlib_load(const char *const *sonames, const char *package,
               const char *const *symbols, void **fns, char *err,
               size_t errlen) {
  void *h = NULL;
  for (size_t i = 0; !h && sonames[i]; i++)
    h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(err, errlen, "%s is not installed (Debian: apt-get install %s)",
             sonames[0], package);
    return false;
  }
  for (size_t i = 0; symbols[i]; i++) {
    fns[i] = dlsym(h, symbols[i]);
    if (!fns[i]) {
      snprintf(err, errlen, "%s has no %s", sonames[0], symbols[i]);
      dlclose(h);
      return false;
    }
  }
  return true;
}

#endif
