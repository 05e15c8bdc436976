"""Events with context values known exactly, of every width and sign, for
the tests that read them (probes_*_ctx_width): run it as ./ctxwidth, a
link to python3, so that its comm tells its events from others.

 - a POSIX write lock on bytes 1000..1009 of a file, then the same lock
   refused to a child (filelock:fcntl_setlk: type 1 (F_WRLCK, a u8), ret
   0 then -11 (-EAGAIN, an int), fl_start 1000 and fl_end 1009 (loff_t));
   the child, alone in its process, exits (sched_process_exit's bool
   group_dead: 1);
 - a TCP listener on 127.0.0.1 and a connection to it
   (sock:inet_sock_set_state: ints oldstate/newstate, __u16 sport/dport
   with the port, above 32767, which prints as PORT, family 2, protocol 6);
 - oom_score_adj raised to 345 (lowering it below 0 takes
   CAP_SYS_RESOURCE, which a container may not have), then the process
   renamed ctxwidth2 (task:task_rename: a short of 345).
Writes the port to the file named by its second argument."""
import fcntl
import os
import socket
import sys

path = sys.argv[1]
with open(path, "w") as f:
    fcntl.lockf(f, fcntl.LOCK_EX, 10, 1000)
    child = os.fork()
    if child == 0:
        with open(path, "w") as g:
            try:
                fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 1000)
            except OSError:
                pass
        os._exit(0)
    os.waitpid(child, 0)

listener = socket.socket()
port = 0
while port < 32768:   # a port whose u16 has its top bit set
    listener.close()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
listener.listen()
socket.create_connection(("127.0.0.1", port)).close()
listener.close()

with open("/proc/self/oom_score_adj", "w") as f:
    f.write("345")
with open("/proc/self/comm", "w") as f:
    f.write("ctxwidth2")
with open(sys.argv[2], "w") as f:
    f.write(str(port))
