// SPDX-License-Identifier: GPL-2.0
/* proginfo ID...: one line per BPF program id: "id type name xlated_insns
 * jited_bytes verified_insns run_time_ns run_cnt recursion_misses", from
 * struct bpf_prog_info (bpftool 7.1 prints no verified_insns). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

int main(int argc, char **argv)
{
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(strtoul(argv[i], NULL, 10));

		if (fd < 0) {
			rc = 1;
			continue;
		}
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			printf("%u %u %s %u %u %u %llu %llu %llu\n", info.id, info.type,
			       info.name[0] ? info.name : "-", info.xlated_prog_len / 8,
			       info.jited_prog_len, info.verified_insns,
			       (unsigned long long)info.run_time_ns,
			       (unsigned long long)info.run_cnt,
			       (unsigned long long)info.recursion_misses);
		else
			rc = 1;
		close(fd);
	}
	return rc;
}
