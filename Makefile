# loupe — a bpftrace-language tracer that emits eBPF itself.
#   make            build ./loupe (dynamically linked)
#   make static     build ./loupe as one static binary
#   make check      unit tests, then the runtime and error tests (root)
#   make asan       build with ASan/UBSan into ./loupe
#   make deps       install the Debian packages to build and test (root)
#   make fuzz       fuzz the compiler in-process (clang, libFuzzer)
#   make demo       count system calls by process for 5 s under load (root)
VERSION  := 0.1.0
CC       ?= cc
CFLAGS   ?= -O2 -g
# Flags every build needs, kept apart from CFLAGS so that `make asan` (or a
# user) can set CFLAGS on the command line without losing them.
BASE_CFLAGS := -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP \
            -DLOUPE_VERSION=\"$(VERSION)\" -Isrc -Ibuild/gen
PKGS     := libbpf libelf libdw zlib
# libbpf, libdw, libelf and zlib (and liblzma and libbz2, which libdw
# needs) are linked into loupe rather than loaded at each start: mapping
# and binding those six libraries took about 0.5 ms, more than half of
# loupe's own part of start-up (bench/README.md, "Where start-up goes").
# Where one of their static libraries is missing, or with
# `make SHARED_LIBS=1`, they are shared libraries.
STATIC_LIBS_FOUND := $(shell for l in bpf dw elf z lzma bz2; do \
  [ -f "$$($(CC) -print-file-name=lib$$l.a)" ] || exit 0; done; echo yes)
ifeq ($(SHARED_LIBS)$(STATIC_LIBS_FOUND),yes)
LDLIBS   += -Wl,-Bstatic $(shell pkg-config --static --libs-only-l $(PKGS) \
              2>/dev/null || echo -lbpf -ldw -lelf -lz -llzma -lbz2) \
            -Wl,-Bdynamic
else
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lbpf -ldw -lelf -lz)
endif
BASE_CFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libmicrohttpd serves --metrics, libcurl pushes to a Pushgateway: loaded
# when needed (src/util/dlib.c), as the thirty libraries they bring would
# make every run start ten times slower; only their headers are built
# against. The static build leaves both out and says so, as Debian has no
# static libraries of what they need.
# libiberty (C++ demangling) has no pkg-config file
LDLIBS   += -liberty
# capstone (x86-64 instruction boundaries for uprobe offsets) is loaded
# when needed (src/sym/disasm.c); only the static build links it.
BASE_CFLAGS += $(EXTRA_CFLAGS)
SRCS     := $(wildcard src/*.c src/*/*.c)
OBJS     := $(SRCS:src/%.c=build/%.o)
LIBOBJS  := $(filter-out build/main.o,$(OBJS))
UNIT     := $(wildcard tests/unit/test_*.c)
UNITBINS := $(UNIT:tests/unit/%.c=build/unit/%)

all: loupe

loupe: $(OBJS)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/%.o: src/%.c | build
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -c -o $@ $<

build/unit/%: tests/unit/%.c $(LIBOBJS) | build
	@mkdir -p build/unit
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $^ $(LDLIBS)

build:
	@mkdir -p build

# x86-64 system call numbers by name (src/probes/syscalls.c), from the
# kernel headers the compiler sees (<asm/unistd_64.h>, linux-libc-dev);
# empty where there are none.
build/gen/syscall_nr.h: | build
	@mkdir -p build/gen
	echo '#include <asm/unistd_64.h>' | $(CC) -dM -E -x c - 2>/dev/null | \
	  awk '$$1 == "#define" && $$2 ~ /^__NR_/ && $$3 ~ /^[0-9]+$$/ \
	    { printf "    {\"%s\", %s},\n", substr($$2, 6), $$3 }' | \
	  LC_ALL=C sort > $@.tmp
	mv $@.tmp $@
build/probes/syscalls.o build/fuzz/probes/syscalls.o: build/gen/syscall_nr.h

static:
	$(MAKE) clean
	$(MAKE) LDFLAGS=-static EXTRA_CFLAGS=-DLOUPE_STATIC LDLIBS="$$(pkg-config --static --libs $(PKGS) 2>/dev/null || echo -lbpf -ldw -lelf -lz) -liberty -lcapstone" loupe

asan:
	$(MAKE) clean
	$(MAKE) CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" loupe

unit: $(UNITBINS)
	@for t in $(UNITBINS); do $$t || exit 1; done

unit-bins: $(UNITBINS)

check: loupe $(UNITBINS)
	tests/run.sh

clean:
	rm -rf build loupe

# Build and test dependencies, from Debian 12 packages; apt only runs when
# one is missing. clang builds the fuzzer; dwz the shared debug file that
# tests/faults/debuglink_fifo.sh follows; bpftrace (0.17) is what the
# side-by-side tests compare loupe's output with.
DEB_PKGS := gcc make pkg-config linux-libc-dev libbpf-dev libelf-dev libdw-dev libiberty-dev \
            libcapstone-dev zlib1g-dev liblzma-dev libbz2-dev libmicrohttpd-dev libcurl4-openssl-dev systemtap-sdt-dev bpftool \
            clang bpftrace dwz
deps:
	@dpkg -s $(DEB_PKGS) >/dev/null 2>&1 || { apt-get update && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y $(DEB_PKGS); }

# What only the tests use: Chromium drives the flame graph's SVG in a
# browser, strace watches which files loupe opens; Prometheus, its
# Pushgateway and node_exporter (with promtool and curl) take loupe's
# metrics (tests/metrics); systemd-analyze, yamllint and the Kubernetes
# client's API types check the files of deploy/.
TEST_PKGS := chromium strace python3 prometheus prometheus-pushgateway \
             prometheus-node-exporter curl systemd yamllint python3-kubernetes
test-deps: deps
	@dpkg -s $(TEST_PKGS) >/dev/null 2>&1 || { apt-get update && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y $(TEST_PKGS); }

# The seed one-liner, for 5 seconds, while dd makes a lot of system calls.
demo: loupe
	@echo "Counting system calls by process name for 5 seconds..."
	@timeout 5 dd if=/dev/zero of=/dev/null bs=1 status=none & \
	timeout --preserve-status -s INT 5 \
	  ./loupe -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'; \
	  status=$$?; wait; exit $$status

# In-process fuzzing of the compiler (tests/fuzz): clang's libFuzzer with
# ASan and UBSan, built apart from ./loupe under build/fuzz.
FUZZ_CC    := clang
FUZZ_FLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
              -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_OBJS  := $(LIBOBJS:build/%.o=build/fuzz/%.o)

build/fuzz/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_FLAGS) -c -o $@ $<

# One harness per tests/fuzz/fuzz_NAME.c (tests/fuzz/run.sh says which
# input each takes).
FUZZERS := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_OBJS)
	$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $(filter-out %.h,$^) $(LDLIBS)

# The symbols fuzz_usdt_args reads (an object beside it, not linked in).
build/fuzz/fuzz_usdt_args: | build/fuzz/usdt_syms.o
build/fuzz/usdt_syms.o: tests/fuzz/usdt_syms.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -O0 -c -o $@ $<

# make fuzz [FUZZ_SECONDS=N]: a fuzzing run of each harness from its seeds.
FUZZ_SECONDS ?= 60
fuzz: $(FUZZERS)
	tests/fuzz/run.sh $(FUZZ_SECONDS)

.PHONY: all static asan unit unit-bins check clean deps test-deps demo fuzz
-include $(OBJS:.o=.d) $(FUZZ_OBJS:.o=.d)
