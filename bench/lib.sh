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

# The kernel verifier's statistics for a tracer's programs, summed over
# them but BEGIN and END: "processed states" (instructions it processed,
# states it kept), from the tracer's -v output on stdin. loupe prints
# "verifier: PROBE:" before each program's statistics, bpftrace 0.17
# "Attaching PROBE" after them. FILTER, an awk pattern, picks the
# programs counted by probe name (default: all).
verifier_sums() {
  awk -v want="${1:-.}" '
    function add(name, p, s) {
      if (name ~ /^(BEGIN|END)$/ || name !~ want) return
      tp += p; ts += s; n++
    }
    /^verifier: / { name = substr($0, 11); sub(/:$/, "", name); next }
    /processed [0-9]+ insns/ {
      for (i = 1; i < NF; i++) {
        if ($i == "processed") p = $(i + 1)
        if ($i == "total_states") s = $(i + 1)
      }
      if (name != "") { add(name, p, s); name = "" } else { pp = p; ps = s; pend = 1 }
      next
    }
    /^Attaching [^0-9]/ && pend { add(substr($0, 11), pp, ps); pend = 0 }
    END { if (n) print tp, ts; else print "- -" }'
}
