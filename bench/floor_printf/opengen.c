// SPDX-License-Identifier: GPL-2.0
/* opengen N: N openat(AT_FDCWD, "/dev/null", O_RDONLY|O_CLOEXEC) calls,
 * each closed at once, and no other openat: linked statically, so the
 * dynamic loader opens nothing either. Its comm is "opengen". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;

	for (long i = 0; i < n; i++) {
		int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			perror("openat");
			return 1;
		}
		close(fd);
	}
	return 0;
}
