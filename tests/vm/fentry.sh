#!/usr/bin/env bash
# fentry and fexit under a kernel that allows them (ours refuses every
# fentry load): boots Debian's kernel once with /work/shared/vm/run-in-vm
# (QEMU) and, inside, runs loupe on
#
#   1. fentry:vfs_read: args.count, and the name of the file `dd` reads
#      through args.file->f_path.dentry (-> and . both follow pointers),
#      probe and func;
#   2. fexit:vfs_read: retval typed as the function returns it (ssize_t,
#      signed), the arguments still readable, under the alias fr:;
#   3. fexit on a function returning a struct pointer, followed to a
#      field (retval->f_flags), under kretfunc:;
#   4. the wildcard fentry:vfs_rea*, counted by probe and func;
#   5. a module's function (overlay, which the VM's root file system
#      uses): fentry:overlay:ovl_read_iter, and its arguments;
#   6. path() of a struct path in security_file_open, is_err() of an
#      fexit's retval; two probes on one function run in script order
#      (kfunc: alias);
#   7. loupe -l 'fentry:vfs_*' and -lv 'fexit:vfs_read';
#   8. errors: a function that does not exist, arg0 in fentry, retval in
#      fentry, path() where the kernel refuses bpf_d_path: located, exit 1;
#   9. write_user() (--unsafe): the path a process opens rewritten in its
#      own memory, which our locked-down kernel does not allow;
#  10. comm where bpf_get_current_comm does not zero-pad (6.1): --info
#      says so, and comm map keys are still exactly the names.
#
# Prints one PASS or FAIL line per check; exits 0 only if all pass.
#
#   tests/vm/fentry.sh               test ./loupe
#   LOUPE=/path/loupe tests/vm/fentry.sh
#   RUN_IN_VM=/path/run-in-vm        the VM runner (default
#                                    /work/shared/vm/run-in-vm)
#
# Exit status: 0 pass, 1 fail, 77 skipped (no VM runner, not root).
. "$(dirname "$0")/lib.sh" "$@"

# err_check NAME REGEX: loupe exited 1 and a stderr line matches REGEX.
err_check() {
  if [ "$status" = 1 ] && grep -qE "$2" "$WORK/err"; then
    pass "$1"
  else
    fail "$1" "exit $status" "stderr: $(head -c 1500 "$WORK/err")"
  fi
}

trace 'fentry:vfs_read /comm == "dd"/ {
         @count[args.count] = count();
         @name[str(args.file->f_path.dentry->d_name.name)] = count();
         @dot[str(args.file.f_path.dentry.d_name.name)] = count();
         @pf[probe, func] = count(); }' "$READ_IT"
check "fentry:vfs_read args.count, args.file->...->name, probe, func" \
  '^@count\[64\]: [1-9]' '^@name\[vmfile\]: [1-9]' '^@dot\[vmfile\]: [1-9]' \
  '^@pf\[fentry:vmlinux:vfs_read, vfs_read\]: [1-9]'

trace 'fr:vfs_read /comm == "dd" && retval > 0/ {
         @bytes[retval, args.count] = count(); @[probe] = count(); }
       fexit:vfs_read /comm == "dd" && retval < 0/ { @neg = count(); }' \
  "$READ_IT"
check "fexit:vfs_read retval (signed) and args" \
  '^@\[fexit:vmlinux:vfs_read\]: [1-9]' '^@bytes\[14, 64\]: 1$'

trace 'kretfunc:alloc_empty_file /comm == "dd"/ {
         @flags[retval->f_flags & 0] = count(); @[probe] = count(); }' \
  "$READ_IT"
check "fexit retval of a struct pointer, followed to a field (kretfunc:)" \
  '^@flags\[0\]: [1-9]' '^@\[fexit:vmlinux:alloc_empty_file\]: [1-9]'

trace 'fentry:vfs_read /comm == "dd"/ { @a[args] = count(); print(args); }
       fexit:vfs_read /comm == "dd"/ { @r = args; }' "$READ_IT"
check "args as one value: a map key, printed, in a map (fexit: without retval)" \
  '^\{ \.file = 0x[0-9a-f]+, \.buf = 0x[0-9a-f]+, \.count = 64, \.pos = 0x[0-9a-f]+ \}$' \
  '^@a\[\{ \.file = 0x[0-9a-f]+, \.buf = 0x[0-9a-f]+, \.count = 64, \.pos = 0x[0-9a-f]+ \}\]: [1-9]' \
  '^@r: \{ \.file = 0x[0-9a-f]+, \.buf = 0x[0-9a-f]+, \.count = [0-9]+, \.pos = 0x[0-9a-f]+ \}$'

trace 'fentry:tcp_v4_connect { printf("cookie %d\n", socket_cookie(args.sk) != 0); exit(); }' \
  "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' 2>/dev/null; true"
check "socket_cookie(args.sk) in fentry:tcp_v4_connect" '^cookie 1$'

# a TCP SYN to 127.0.0.1: IP header (45...), its addresses, port 9
ip link set lo up 2>/dev/null
trace "fentry:__dev_queue_xmit { printf(\"ret %d\n\", skboutput(\"$WORK/syn.pcap\", args.skb, args.skb->len, 14)); exit(); }" \
  "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' 2>/dev/null; true"
check "skboutput() in fentry:__dev_queue_xmit returns 0" '^ret 0$'
if od -A n -t x1 -j 40 -N 20 "$WORK/syn.pcap" | tr -d ' \n' | grep -qE '^45.{22}7f0000017f000001$' &&
   [ "$(od -A n -t x1 -j 20 -N 4 "$WORK/syn.pcap" | tr -d ' \n')" = 65000000 ]; then
  pass "skboutput() writes the packet, from its IP header, to a pcap file of raw IP"
else
  fail "skboutput() pcap file" "$(od -A x -t x1 "$WORK/syn.pcap" | head -6)"
fi

# fentry:bpf and fexit:bpf: a function of another loupe's running program,
# named after its probe, found by -l, traced each time that program runs
"$LOUPE" -e 'tracepoint:sched:sched_process_exec { @execs = count(); }' \
  >"$WORK/a.out" 2>"$WORK/a.err" &
other=$!
for ((i = 0; i < 600; i++)); do
  grep -q 'Attached' "$WORK/a.err" && break
  sleep 0.1
done
"$LOUPE" -l 'fentry:bpf:*' >"$WORK/bpf.list"
id=$(awk -F: '$4 == "tracepoint_sched_sched_process_exec" {print $3; exit}' "$WORK/bpf.list")
trace "fexit:bpf:$id:tracepoint_sched_sched_process_exec { @[probe] = count(); } fentry:bpf:tracepoint_sched_sched_proc* { @entries = count(); }" \
  '/bin/true; /bin/true'
kill -INT "$other"
wait "$other"
if [ -n "$id" ]; then
  check "fexit:bpf:ID:NAME and fentry:bpf:GLOB on another program's function" \
    "^@\[fexit:bpf:$id:tracepoint_sched_sched_process_exec\]: [2-9]" '^@entries: [2-9]'
else
  fail "-l 'fentry:bpf:*' lists the other program's function" "$(head -c 600 "$WORK/bpf.list")"
fi

trace 'fentry:vfs_rea* /comm == "dd"/ { @[probe, func] = count(); }' \
  "$READ_IT"
check "wildcard fentry:vfs_rea*" \
  '^@\[fentry:vmlinux:vfs_read, vfs_read\]: [1-9]'
grep -qE '^Attached [2-9][0-9]* probes' "$WORK/err" ||
  fail "wildcard attaches every match" "stderr: $(head -c 600 "$WORK/err")"

if "$LOUPE" -l 'fentry:overlay:ovl_read_iter' | grep -qx 'fentry:overlay:ovl_read_iter'; then
  # /etc/hostname: a file of the host, read through the overlay
  trace 'fentry:overlay:ovl_read_iter /comm == "dd"/ {
           @[probe, str(args.iocb->ki_filp->f_path.dentry->d_name.name)] = count(); }' \
    'dd if=/etc/hostname of=/dev/null bs=64 status=none'
  check "a module's function: fentry:overlay:ovl_read_iter" \
    '^@\[fentry:overlay:ovl_read_iter, hostname\]: [1-9]'
else
  echo "SKIP a module's function: no overlay module with BTF in this VM"
fi

trace 'fentry:security_file_open /comm == "dd"/ { @[path(args.file->f_path)] = count(); }
       fexit:do_filp_open /comm == "cat"/ { @err[is_err(retval)] = count(); }' \
  "$READ_IT; cat $WORK/nosuch"
# (the VM's /tmp is an overlay: an open passes security_file_open twice)
check "path() of args.file->f_path, is_err(retval)" \
  "^@\\[$WORK/vmfile\\]: [1-9]" '^@err\[true\]: [1-9]'

trace 'kfunc:vfs_read /comm == "dd"/ { printf("first"); }
       kfunc:vfs_read /comm == "dd"/ { printf(" second\n"); exit(); }' \
  "$READ_IT"
check "two probes on one function run in script order" '^first second$'

"$LOUPE" -l 'fentry:vfs_*' >"$WORK/out" 2>"$WORK/err"
if grep -qx 'fentry:vmlinux:vfs_read' "$WORK/out" &&
   grep -qx 'fentry:vmlinux:vfs_write' "$WORK/out" &&
   ! grep -qv '^fentry:vmlinux:vfs_' "$WORK/out"; then
  pass "-l 'fentry:vfs_*'"
else
  fail "-l 'fentry:vfs_*'" "stdout: $(head -c 600 "$WORK/out")"
fi
"$LOUPE" -lv 'fexit:vfs_read' >"$WORK/out" 2>"$WORK/err"
if diff -u - "$WORK/out" >"$WORK/diff" <<'EOF'
fexit:vmlinux:vfs_read
    struct file * file
    char * buf
    size_t count
    loff_t * pos
    ssize_t retval
EOF
then
  pass "-lv 'fexit:vfs_read'"
else
  fail "-lv 'fexit:vfs_read'" "$(cat "$WORK/diff")"
fi

"$LOUPE" -e 'fentry:nosuch_fn_x { }' >"$WORK/out" 2>"$WORK/err"
status=$?
err_check "fentry on a missing function is a located error" \
  '^stdin:1:1-19: ERROR: No matches for fentry nosuch_fn_x\.$'
"$LOUPE" -e 'fentry:vfs_read { printf("%d\n", arg0); }' >"$WORK/out" 2>"$WORK/err"
status=$?
err_check "arg0 in fentry is an error" \
  "^stdin:1:34-38: ERROR: The arg0 builtin can only be used with 'kprobes'"
"$LOUPE" -e 'fentry:vfs_read { @ = retval; }' >"$WORK/out" 2>"$WORK/err"
status=$?
err_check "retval in fentry is an error" \
  "^stdin:1:23-29: ERROR: The retval builtin can only be used with"

"$LOUPE" -e 'fentry:vfs_read { print(path(args.file.f_path)); }' >"$WORK/out" 2>"$WORK/err"
status=$?
err_check "path() where the kernel does not allow bpf_d_path: at the call" \
  '^stdin:1:25-47: ERROR: helper bpf_d_path not allowed in probe$'

# cat opens a file that does not exist; the probe rewrites the path in
# cat's argv to /etc/hostname, which it then prints
"$LOUPE" --unsafe -e 'tracepoint:syscalls:sys_enter_openat
    /str(args.filename) == "/tmp/loupe_no_such_file_x"/ {
      if (write_user(args.filename, "/etc/hostname", 14)) { printf("written\n"); } }' \
  -c 'cat /tmp/loupe_no_such_file_x' >"$WORK/out" 2>"$WORK/err"
status=$?
if [ "$status" = 0 ] && grep -qx written "$WORK/out" &&
   grep -qxF "$(cat /etc/hostname)" "$WORK/out"; then
  pass "write_user() rewrites the path cat opens"
else
  fail "write_user() rewrites the path cat opens" "exit $status" \
    "stdout: $(head -c 600 "$WORK/out")" "stderr: $(head -c 1500 "$WORK/err")"
fi

# 6.1 copies comm with strscpy (no padding): loupe must find that out and
# zero the key itself, or names would count under keys with stale bytes
cp /bin/true "$WORK/a"; cp /bin/true "$WORK/abcdefghijklmno"
printf 'for i in 1 2 3 4; do %s/abcdefghijklmno; %s/a; done\n' "$WORK" "$WORK" \
  >"$WORK/names.sh"
"$LOUPE" -e 'tracepoint:sched:sched_process_exit
    /comm == "a" || comm == "abcdefghijklmno"/ { @[comm] = count(); }' \
  -c "sh $WORK/names.sh" \
  >"$WORK/out" 2>"$WORK/err"
status=$?
pads=$("$LOUPE" --info 2>&1 | sed -n 's/^  get_current_comm zero-pads: //p')
if [ "$status" = 0 ] && [ "$pads" = no ] &&
   [ "$(grep -c '^@\[' "$WORK/out")" = 2 ] &&
   grep -qx '@\[a\]: 4' "$WORK/out" &&
   grep -qx '@\[abcdefghijklmno\]: 4' "$WORK/out"; then
  pass "comm keys exact where the kernel does not zero-pad comm"
else
  fail "comm keys exact where the kernel does not zero-pad comm" \
    "exit $status, zero-pads: $pads" "stdout: $(head -c 600 "$WORK/out")" \
    "stderr: $(head -c 1500 "$WORK/err")"
fi

rm -rf "$WORK"
[ $failed = 0 ]
