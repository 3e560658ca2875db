# storm top-level build. `make demo` runs the main job; `make check` runs every test.
CC      ?= cc
BUILD   := build
CFLAGS  := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -fPIC -MMD -MP \
           -I net_abstraction
LDLIBS  := -lfabric
SANFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

NET_SRC := $(wildcard net_abstraction/*.c)

.PHONY: all deps bench-deps demo check unit unit-asan nettest bench bench-launch clean
all: $(BUILD)/lib/libstormnet.a $(BUILD)/bin/primitives_demo $(BUILD)/bin/sn_mptest \
     $(BUILD)/bin/unit_tests

deps:
	@./scripts/install-deps.sh
bench-deps:
	@./scripts/install-deps.sh --bench

# ---- libraries
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SANFLAGS) -c $< -o $@

$(BUILD)/lib/libstormnet.a: $(NET_SRC:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

# ---- programs
$(BUILD)/bin/primitives_demo: $(BUILD)/obj/demo/primitives_demo.o $(BUILD)/obj/tests/lib/spawn.o \
                              $(BUILD)/lib/libstormnet.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDLIBS)
$(BUILD)/bin/sn_bench: $(BUILD)/obj/bench/primitives/sn_bench.o $(BUILD)/obj/tests/lib/spawn.o \
                       $(BUILD)/lib/libstormnet.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDLIBS) -lm

# ---- tests
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_LIB := net_abstraction/nodeset.c net_abstraction/tree.c net_abstraction/wire.c
$(BUILD)/bin/unit_tests: $(UNIT_SRC:%.c=$(BUILD)/obj/%.o) $(UNIT_LIB:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ -lcunit
$(BUILD)/bin/unit_tests_asan: $(UNIT_SRC:%.c=$(BUILD)/asan/%.o) $(UNIT_LIB:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) -o $@ $^ -lcunit
$(BUILD)/bin/sn_mptest: $(BUILD)/obj/tests/net/sn_mptest.o $(BUILD)/obj/tests/lib/spawn.o \
                        $(BUILD)/lib/libstormnet.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDLIBS) -lcunit

unit: $(BUILD)/bin/unit_tests
	$(BUILD)/bin/unit_tests
unit-asan: $(BUILD)/bin/unit_tests_asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/bin/unit_tests_asan
nettest: $(BUILD)/bin/sn_mptest
	$(BUILD)/bin/sn_mptest

check: deps
	$(MAKE) all
	$(MAKE) unit unit-asan nettest

demo: deps
	$(MAKE) $(BUILD)/bin/primitives_demo
	$(BUILD)/bin/primitives_demo --nodes 8

bench: bench-deps
	$(MAKE) all $(BUILD)/bin/sn_bench
	./bench/primitives/run.sh
	./bench/launch/run.sh

# the launch experiment alone (storm against srun --bcast, srun, mpiexec, copies)
bench-launch: bench-deps
	./bench/launch/run.sh

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
