# Helpers shared by the benchmarks (sourced, not run).

# The median of the numbers on stdin, "-" if there are none.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

# How many times A is smaller than B ("12.3x"), "-" when either is missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b != "-" && a != "-") printf "%.1fx", b / a; else print "-" }'; }

# The ids of the BPF programs process PID holds (Debian's bpftool shows no
# owner pids, so they are read from its fdinfo).
tracer_prog_ids() {
  sed -n 's/^prog_id:[[:space:]]*//p' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u
}
