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

# The scripts bench/run.sh and bench/startup.sh measure, by name.
NAMES=(begin syscount execsnoop opensnoop readbytes writehist countid printf3)
SCRIPTS=(
  'BEGIN { printf("go\n"); exit(); }'
  'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'
  'tracepoint:sched:sched_process_exec { printf("exec by %s\n", comm); }'
  'tracepoint:syscalls:sys_enter_openat { printf("%s %s\n", comm, str(args->filename)); }'
  'tracepoint:syscalls:sys_exit_read /args->ret > 0/ { @bytes[comm] = sum(args->ret); @max = max(args->ret); @avg = avg(args->ret); }'
  'tracepoint:syscalls:sys_enter_write { @bytes = hist(args->count); }'
  'tracepoint:raw_syscalls:sys_enter { @[args->id] = count(); }'
  'tracepoint:syscalls:sys_enter_openat { printf("%d %s %d\n", pid, comm, args->flags); }'
)

# Starts TOOL with SCRIPT (plus a BEGIN printing "go") under GNU time and
# waits for "go". Sets TRACER_PID (the tracer itself), TIME_PID and
# STARTUP_MS; stdout keeps being drained so the tracer never blocks.
start_tracer() {
  local tool=$1 script=$2 line t0 t1
  case $script in BEGIN*) ;; *) script="BEGIN { printf(\"go\\n\"); } $script" ;; esac
  rm -f "$WORK/fifo" && mkfifo "$WORK/fifo"
  local timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -f %M -o "$WORK/mem")
  rm -f "$WORK/mem"
  t0=$EPOCHREALTIME
  "${timer[@]}" "$tool" -e "$script" >"$WORK/fifo" 2>"$WORK/stderr" &
  TIME_PID=$!
  exec 3<"$WORK/fifo"
  while IFS= read -r -t 30 line <&3; do [ "$line" = go ] && break; done
  t1=$EPOCHREALTIME
  cat <&3 >/dev/null &
  DRAIN_PID=$!
  exec 3<&-
  STARTUP_MS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
  TRACER_PID=$TIME_PID
  if [ ${#timer[@]} -gt 0 ]; then
    TRACER_PID=$(pgrep -P "$TIME_PID" | head -n 1)
    TRACER_PID=${TRACER_PID:-$TIME_PID}
  fi
}

# Stops the tracer (it may have exited already) and prints its peak RSS (KB).
stop_tracer() {
  kill -INT "$TRACER_PID" 2>/dev/null
  wait "$TIME_PID" 2>/dev/null
  wait "$DRAIN_PID" 2>/dev/null
  if [ -s "$WORK/mem" ]; then tail -n 1 "$WORK/mem"; else echo -; fi
}

