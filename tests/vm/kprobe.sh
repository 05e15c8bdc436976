#!/usr/bin/env bash
# kprobe and kretprobe under a kernel that has them: boots Debian's kernel
# once with /work/shared/vm/run-in-vm (QEMU) and, inside, runs loupe on
#
#   1. kprobe:do_nanosleep, printing comm, probe and func for `sleep`;
#   2. arg0 of do_sys_openat2 (AT_FDCWD, -100) and arg0 of vfs_read cast to
#      struct file *, following it to the name of the file `dd` reads;
#      str(arg1), a user pointer, under the alias k:;
#   3. kretprobe:vfs_read, counting reads by `dd` that returned > 0, one
#      of them the 14 bytes of its input file;
#   4. the wildcard kprobe:vfs_rea*, counted by probe and func, which
#      come from each function's cookie in one program; the same for a
#      uprobe wildcard on libc;
#   5. wildcards without `probe` or `func`: one program, one kprobe_multi
#      link for all functions (where the kernel has fprobe), kretprobes
#      too; the exit time of kprobe:vfs_* and nothing left behind;
#      kprobe:vfs_read+0, kprobe:vmlinux:vfs_read, kprobe:vmlinu*:...;
#      errors for an offset inside an instruction and a missing module;
#      loupe -l 'kprobe:vfs_*', and -lv with parameters from BTF;
#   6. a function that does not exist: a located error, exit 1; arg0 in
#      a kretprobe: bpftrace's error; override() on a kernel without
#      bpf_override_return, and without --unsafe; a watchpoint on
#      jiffies.
#
# Prints one PASS or FAIL line per check; exits 0 only if all pass.
#
#   tests/vm/kprobe.sh               test ./loupe
#   LOUPE=/path/loupe tests/vm/kprobe.sh
#   RUN_IN_VM=/path/run-in-vm        the VM runner (default
#                                    /work/shared/vm/run-in-vm)
#
# Exit status: 0 pass, 1 fail, 77 skipped (no VM runner, not root).
. "$(dirname "$0")/lib.sh" "$@"

# check_error NAME SCRIPT PATTERN: loupe must refuse SCRIPT with exit 1
# and a stderr line matching PATTERN (grep).
check_error() {
  timeout 120 "$LOUPE" "${@:4}" -e "$2" >"$WORK/out" 2>"$WORK/err"
  status=$?
  if [ $status = 1 ] && grep -q "$3" "$WORK/err"; then
    pass "$1"
  else
    fail "$1" "exit $status" "stderr: $(cat "$WORK/err")"
  fi
}

trace 'kprobe:do_nanosleep /comm == "sleep"/ {
         printf("%s %s %s\n", comm, probe, func); exit(); }' 'sleep 0.2'
check "kprobe:do_nanosleep prints comm, probe, func" \
  '^sleep kprobe:do_nanosleep do_nanosleep$'

trace 'kprobe:do_sys_openat2 /comm == "dd"/ { @dfd[(int32)arg0] = count(); }
       kprobe:vfs_read /comm == "dd"/ {
         @name[str(((struct file *)arg0)->f_path.dentry->d_name.name)] = count(); }' \
  "$READ_IT"
check "arg0: an integer, and a pointer cast to struct file *" \
  '^@dfd\[-100\]: [1-9]' '^@name\[vmfile\]: [1-9]'

trace 'k:do_sys_openat2 /comm == "dd"/ { printf("%s %s\n", probe, str(arg1)); }' \
  "$READ_IT"
check "str(arg1) of a user pointer, alias k:" \
  "^kprobe:do_sys_openat2 $WORK/vmfile$"

trace 'kretprobe:vfs_read /comm == "dd" && (int64)retval > 0/ {
         @[probe] = count(); @bytes[retval] = count(); }' "$READ_IT"
check "kretprobe:vfs_read retval > 0" \
  '^@\[kretprobe:vfs_read\]: [1-9]' '^@bytes\[14\]: 1$'

trace 'kprobe:vfs_rea* /comm == "dd"/ { @[probe, func] = count(); }' \
  "$READ_IT"
check "wildcard kprobe:vfs_rea*" \
  '^@\[kprobe:vfs_read, vfs_read\]: [1-9]'
grep -qE '^Attached [2-9][0-9]* probes' "$WORK/err" ||
  fail "wildcard attaches every match" "stderr: $(head -c 600 "$WORK/err")"
# probe and func come from each function's cookie: one program for all
progs=$("$LOUPE" -d -e 'kprobe:vfs_rea* { @[probe, func] = count(); }' |
        grep -c '^; .* insns)$')
if [ "$progs" = 1 ]; then
  pass "a wildcard that reads probe and func is one program"
else
  fail "a wildcard that reads probe and func is one program" "$progs programs"
fi

# A uprobe wildcard that reads func is one program too, on a kernel that
# may lack uprobe_multi links (6.1): then a perf event per function, each
# with its cookie
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
trace "uprobe:$libc:str* /comm == \"ls\"/ { @[func] = count(); }" 'ls / >/dev/null'
check "uprobe wildcard counted by func (names from each function's cookie)" \
  '^@\[str[a-z_]+\]: [1-9]'
progs=$("$LOUPE" -d -e "uprobe:$libc:str* { @[func] = count(); }" |
        grep -c '^; .* insns)$')
[ "$progs" = 1 ] && pass "a uprobe wildcard that reads func is one program" ||
  fail "a uprobe wildcard that reads func is one program" "$progs programs"

# usdt on a kernel that may lack uprobe_multi links (6.1): a perf event
# per location, where loupe once took the kernel's loading of a program
# for them as proof that it has them
printf '#include <sys/sdt.h>\nint main(void) { DTRACE_PROBE1(loupe, tick, 7); return 0; }\n' >"$WORK/u.c"
if gcc -O1 -o "$WORK/u" "$WORK/u.c" 2>/dev/null; then
  trace "usdt:$WORK/u:loupe:tick { @[arg0] = count(); }" "$WORK/u"
  check "usdt probe fires where uprobe_multi links may be missing" '^@\[7\]: 1$'
else
  echo "(no gcc or <sys/sdt.h>: usdt not checked)"
fi

# One program for all the functions of a wildcard: one kprobe_multi link
# each for the kprobe and the kretprobe, where the kernel has fprobe.
trace 'kprobe:vfs_rea* /comm == "dd"/ { @entries = count(); }
       kretprobe:vfs_rea* /comm == "dd"/ { @returns = count(); }' \
  "bpftool link show >$WORK/links; $READ_IT"
check "wildcard kprobe and kretprobe with one shared program each" \
  '^@entries: [1-9]' '^@returns: [1-9]'
if ! grep -q ' register_fprobe$' /proc/kallsyms; then
  echo "(no fprobe in this kernel: kprobe_multi not checked)"
elif [ "$(grep -c kprobe_multi "$WORK/links")" = 2 ]; then
  pass "a wildcard's program is put on its functions with one kprobe_multi link"
else
  fail "a wildcard's program is put on its functions with one kprobe_multi link" \
    "bpftool link show: $(head -c 1500 "$WORK/links")"
fi

# Detaching a wildcard of many functions: one link to close.
n=$("$LOUPE" -l 'kprobe:vfs_*' | wc -l)
"$LOUPE" -e 'kprobe:vfs_* { @ = count(); }' >"$WORK/out" 2>"$WORK/err" &
pid=$!
for ((i = 0; i < 600; i++)); do
  grep -qE 'Attached [0-9]+ probes' "$WORK/err" && break
  sleep 0.1
done
t0=$(date +%s%N)
kill -INT $pid
wait $pid
t1=$(date +%s%N)
echo "(kprobe:vfs_*: $n functions, exit took $(( (t1 - t0) / 1000000 )) ms under emulation)"
if grep -qE "^Attached $n probes" "$WORK/err" &&
   ! bpftool link show | grep -q kprobe_multi; then
  pass "kprobe:vfs_* attaches $n probes and leaves no link behind"
else
  fail "kprobe:vfs_* attaches $n probes and leaves no link behind" \
    "stderr: $(head -c 600 "$WORK/err")" "links: $(bpftool link show | head -c 600)"
fi

# An offset into the function; a module, named or matched.
trace 'kprobe:vfs_read+0 /comm == "dd"/ { @[probe] = count(); }
       kprobe:vmlinux:vfs_read /comm == "dd"/ { @[probe] = count(); }
       kprobe:vmlinu*:vfs_read /comm == "dd"/ { @m = count(); }' "$READ_IT"
check "kprobe:vfs_read+0, kprobe:vmlinux:vfs_read, kprobe:vmlinu*:vfs_read" \
  '^@\[kprobe:vfs_read\+0\]: [1-9]' '^@\[kprobe:vmlinux:vfs_read\]: [1-9]' \
  '^@m: [1-9]'

check_error "an offset inside an instruction is a located error" 'kprobe:vfs_read+1 { }' \
  'ERROR: Unable to attach probe: kprobe:vfs_read+1: offset 1 is not at an instruction boundary of vfs_read'

check_error "a module that is not loaded is a located error" 'kprobe:nonsense:vfs_read { }' \
  '^stdin:1:1-25: ERROR: specified module nonsense in probe kprobe:nonsense:vfs_read is not loaded.'

"$LOUPE" -l 'kprobe:vfs_*' >"$WORK/out" 2>"$WORK/err"
if grep -qx 'kprobe:vfs_read' "$WORK/out" && grep -qx 'kprobe:vfs_write' "$WORK/out" &&
   ! grep -qv '^kprobe:vfs_' "$WORK/out"; then
  pass "-l 'kprobe:vfs_*'"
else
  fail "-l 'kprobe:vfs_*'" "stdout: $(head -c 600 "$WORK/out")"
fi

"$LOUPE" -lv 'kprobe:vfs_read,kprobe:vfs_write' >"$WORK/out" 2>"$WORK/err"
if [ "$(sed -n 1,5p "$WORK/out")" = "$(printf 'kprobe:vfs_read\n    struct file * file\n    char * buf\n    size_t count\n    loff_t * pos')" ] &&
   grep -qx 'kprobe:vfs_write' "$WORK/out" && grep -qx '    const char \* buf' "$WORK/out"; then
  pass "-lv kprobe:vfs_read,kprobe:vfs_write lists each function's parameters from BTF"
else
  fail "-lv kprobe:vfs_read,kprobe:vfs_write" "stdout: $(head -c 600 "$WORK/out")"
fi

check_error "kprobe on a missing function is a located error" 'kprobe:nosuch_fn_x { }' \
  '^stdin:1:1-19: ERROR: No matches for kprobe nosuch_fn_x.'

check_error "an RCU function by name is refused without --unsafe, located" 'kprobe:rcu_read_lock_held { }' \
  '^stdin:1:1-26: ERROR: rcu_read_lock_held is not probed: a probe on an RCU or idle function can stall the kernel'

check_error "a wildcard leaves RCU functions out: kprobe:rcu_* matches nothing" 'kprobe:rcu_* { }' \
  '^stdin:1:1-13: ERROR: No matches for kprobe rcu_\*'

"$LOUPE" -l 'kprobe:*' >"$WORK/out" 2>"$WORK/err"
if grep -q '^kprobe:vfs_read$' "$WORK/out" &&
   ! grep -qE '^kprobe:(.*:)?(rcu_.*|arch_cpu_idle|default_idle)$' "$WORK/out"; then
  pass "-l 'kprobe:*' lists no RCU or idle functions"
else
  fail "-l 'kprobe:*' lists no RCU or idle functions" "$(grep -E 'rcu_|_idle$' "$WORK/out" | head -5)"
fi
"$LOUPE" --unsafe -l 'kprobe:rcu_*' >"$WORK/out" 2>"$WORK/err"
if grep -q '^kprobe:rcu_' "$WORK/out"; then
  pass "--unsafe -l lists RCU functions"
else
  fail "--unsafe -l lists RCU functions" "stdout: $(head -c 300 "$WORK/out")" "stderr: $(head -c 300 "$WORK/err")"
fi

# --traceable-functions: the list kprobes match against
check_error "--traceable-functions with an empty list: nothing matches" \
  'kprobe:vfs_read { }' '^stdin:1:1-16: ERROR: No matches for kprobe vfs_read.' \
  --traceable-functions /dev/null
printf 'vfs_read\nvfs_write\n' >"$WORK/funcs"
trace_opts=(--traceable-functions "$WORK/funcs")
trace 'kprobe:vfs_* /comm == "dd"/ { @[probe] = count(); }' "$READ_IT"
check "--traceable-functions narrows a wildcard to the listed functions" \
  '^@\[kprobe:vfs_read\]: [1-9]'
grep -qE '^Attached 2 probes' "$WORK/err" ||
  fail "--traceable-functions: two functions listed, two probes" "stderr: $(head -c 600 "$WORK/err")"
trace_opts=(--unsafe --traceable-functions /dev/null)
trace 'kprobe:vfs_read /comm == "dd"/ { @n = count(); }' "$READ_IT"
check "--unsafe attaches to a function the list leaves out, with a warning" '^@n: [1-9]'
grep -q 'WARNING: vfs_read is not traceable' "$WORK/err" ||
  fail "--unsafe: the warning" "stderr: $(head -c 600 "$WORK/err")"
trace_opts=()

# kprobe:ADDR (--unsafe): the function holding the address is `func`
addr=$(awk '$3 == "vfs_read" { print $1; exit }' /proc/kallsyms)
trace_opts=(--unsafe)
trace "kprobe:0x$addr /comm == \"dd\"/ { @[probe, func] = count(); }" "$READ_IT"
check "kprobe at a bare address (--unsafe): probe as written, func the function there" \
  "^@\\[kprobe:0x$addr, vfs_read\\]: [1-9]"
trace_opts=()
check_error "kprobe at a bare address without --unsafe is a located error" \
  "kprobe:0x$addr { }" '^stdin:1:1-26: ERROR: a kprobe at a bare address needs --unsafe'
check_error "kprobe at an address where nothing can be probed: the kernel's refusal, located" \
  'kprobe:0x12345678 { }' '^stdin:1:1-18: ERROR: Unable to attach probe: kprobe:0x12345678' --unsafe

# Debian's kernels (6.1, 6.12) are built without CONFIG_BPF_KPROBE_OVERRIDE:
# override() is refused as the program loads, in words that say so.
check_error "override() where the kernel lacks bpf_override_return: a located error that says why" \
  'kprobe:vfs_read { override(0); }' \
  '^stdin:1:19-30: ERROR: .*override() needs CONFIG_BPF_KPROBE_OVERRIDE' --unsafe
check_error "override() without --unsafe is an error" 'kprobe:vfs_read { override(0); }' \
  'ERROR: override() is an unsafe function'

# a kernel address: watched on every CPU (this kernel has kprobes and
# lists its variables in kallsyms, which the development machines lack)
jiffies=$(awk '$3 == "jiffies" {print $1; exit}' /proc/kallsyms)
"$LOUPE" -e "watchpoint:0x$jiffies:4:w { @hits = count(); if (@hits >= 3) { exit(); } }" \
  >"$WORK/out" 2>"$WORK/err"
if grep -qE '^@hits: [3-9]$' "$WORK/out"; then
  pass "watchpoint on a kernel variable (jiffies, written at each tick) fires on any CPU"
else
  fail "watchpoint on jiffies" "stdout: $(head -c 300 "$WORK/out")" "stderr: $(head -c 600 "$WORK/err")"
fi

check_error "arg0 in a kretprobe is an error" 'kretprobe:vfs_read { printf("%d\n", arg0); }' \
  "ERROR: The arg0 builtin can only be used with 'kprobes'"

rm -rf "$WORK"
[ $failed = 0 ]
