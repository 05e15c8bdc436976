# loupe — a bpftrace-language tracer that emits eBPF itself.
#   make            build ./loupe (dynamically linked)
#   make static     build ./loupe as one static binary
#   make check      unit tests, then the runtime and error tests (root)
#   make asan       build with ASan/UBSan into ./loupe
VERSION  := 0.1.0
CC       ?= cc
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP \
            -DLOUPE_VERSION=\"$(VERSION)\"
PKGS     := libbpf libelf zlib
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lbpf -lelf -lz)
CFLAGS   += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)

SRCS     := $(wildcard src/*.c)
OBJS     := $(SRCS:src/%.c=build/%.o)
LIBOBJS  := $(filter-out build/main.o,$(OBJS))
UNIT     := $(wildcard tests/unit/test_*.c)
UNITBINS := $(UNIT:tests/unit/%.c=build/unit/%)

all: loupe

loupe: $(OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/%.o: src/%.c | build
	$(CC) $(CFLAGS) -c -o $@ $<

build/unit/%: tests/unit/%.c $(LIBOBJS) | build
	@mkdir -p build/unit
	$(CC) $(CFLAGS) -Isrc -o $@ $^ $(LDLIBS)

build:
	@mkdir -p build

static:
	$(MAKE) clean
	$(MAKE) LDFLAGS=-static LDLIBS="-lbpf -lelf -lz -lzstd" loupe

asan:
	$(MAKE) clean
	$(MAKE) CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" loupe

unit: $(UNITBINS)
	@for t in $(UNITBINS); do $$t || exit 1; done

check: loupe $(UNITBINS)
	tests/run.sh

clean:
	rm -rf build loupe

.PHONY: all static asan unit check clean
-include $(OBJS:.o=.d)
