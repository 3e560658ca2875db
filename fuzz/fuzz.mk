# Fuzzing (fuzz/README.md). Included by the top-level Makefile.
#
# Each target T has one harness, fuzz/T.c (LLVMFuzzerTestOneInput), and the
# product sources it drives, FUZZ_DEPS_T. It is built twice:
#   build/fuzz/T        clang + libFuzzer + ASan/UBSan: `make fuzz` runs it
#   build/fuzz/check/T  cc + ASan/UBSan + fuzz/driver.c: `make fuzz-check`
#                       (part of `make check`) replays the seed corpus
#                       tests/fuzz/corpus/T and the regressions tests/fuzz/regress/T
# To add a target: write fuzz/T.c, add T to FUZZ_TARGETS and its FUZZ_DEPS_T.
FUZZ_TARGETS := frame ctl_request ctl_reply mm_report nd_command nd_strobe nd_chunk \
                wire nodeset config hostlist cli_opts mm_state ctl_auth bcs_trace \
                ckpt_image bcs_ckpt_state nd_copy pmi_wire

FUZZ_DEPS_frame       := common/frame.c
FUZZ_DEPS_bcs_trace   := bcs_mpi/abi/trace_codec.c
FUZZ_DEPS_ckpt_image  := checkpoint/image.c checkpoint/fdinfo.c checkpoint/util.c checkpoint/proctree.c
FUZZ_DEPS_bcs_ckpt_state := bcs_mpi/abi/chan_ckpt.c
FUZZ_DEPS_ctl_request := daemons/mm/request.c common/config.c common/hostlist.c
FUZZ_DEPS_ctl_reply   := $(filter-out cli/main.c,$(CLI_SRC)) $(COMMON_SRC)
FUZZ_DEPS_mm_report   := daemons/mm/request.c common/config.c common/hostlist.c
FUZZ_DEPS_nd_command  := daemons/node/check.c
FUZZ_DEPS_nd_strobe   := daemons/node/check.c
FUZZ_DEPS_nd_chunk    := daemons/node/check.c
FUZZ_DEPS_nd_copy     := daemons/node/check.c
FUZZ_DEPS_wire        := net_abstraction/wire.c net_abstraction/nodeset.c
FUZZ_DEPS_nodeset     := net_abstraction/nodeset.c
FUZZ_DEPS_config      := common/config.c common/hostlist.c
FUZZ_DEPS_hostlist    := common/hostlist.c
FUZZ_DEPS_cli_opts    := cli/opts.c cli/fmt.c
FUZZ_DEPS_mm_state    := $(MM_SRC) $(COMMON_SRC) net_abstraction/nodeset.c fuzz/stub_sn.c
FUZZ_DEPS_ctl_auth    := common/ctl_auth.c common/log.c common/gm_auth.c
FUZZ_DEPS_pmi_wire    := daemons/node/pmi_wire.c
# the MM's main() gives way to the harness's
FUZZ_EXTRA_daemons/mm/main.c := -Dmain=stormmm_main

FUZZ_CC      ?= $(shell command -v clang-14 || command -v clang)
FUZZ_SECONDS ?= 60
FUZZ_INC     := -I net_abstraction -I common -I scheduler -I bcs_mpi/abi -I $(GEN)/proto -I fuzz -I cli \
                -I daemons/mm -I daemons/node -I checkpoint
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -MMD -MP -g -O1 -fno-omit-frame-pointer -Wall -Wextra $(FUZZ_INC)
FUZZ_LIBS    := -lprotobuf-c -linih -ljansson $(AUTH_LIBS) $(MM_LIBS) -lxxhash -lelf
FUZZ_LF      := -fsanitize=address,undefined -fno-sanitize-recover=all

.PHONY: fuzz fuzz-build fuzz-check fuzz-corpus fuzz-merge
# libFuzzer builds: every object instrumented for coverage
$(BUILD)/fuzz/lf/$(GEN)/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_LF) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/lf/%.o: %.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror $(FUZZ_EXTRA_$<) $(FUZZ_LF) -fsanitize=fuzzer-no-link -c $< -o $@
# replay builds with the ordinary compiler (the generated codecs without -Werror)
$(BUILD)/asan/$(GEN)/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Werror,$(CFLAGS)) $(SANFLAGS) -c $< -o $@
$(BUILD)/fuzz/asan/%.o: %.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SANFLAGS) $(FUZZ_INC) $(FUZZ_EXTRA_$<) -c $< -o $@

define FUZZ_TEMPLATE
$(BUILD)/fuzz/$(1): $(BUILD)/fuzz/lf/fuzz/$(1).o \
    $$(patsubst %.c,$(BUILD)/fuzz/lf/%.o,$$(FUZZ_DEPS_$(1)) $(PROTO_C))
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_LF) -o $$@ $$^ $(FUZZ_LIBS)
$(BUILD)/fuzz/check/$(1): $(BUILD)/fuzz/asan/fuzz/$(1).o $(BUILD)/fuzz/asan/fuzz/driver.o \
    $$(patsubst %.c,$(BUILD)/fuzz/asan/%.o,$$(FUZZ_DEPS_$(1))) $(PROTO_C:$(GEN)/%.c=$(BUILD)/asan/$(GEN)/%.o)
	@mkdir -p $$(dir $$@)
	$(CC) $(SANFLAGS) -o $$@ $$^ $(FUZZ_LIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_TEMPLATE,$(t))))

fuzz-build: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%)
# FUZZ_SECONDS per target (FUZZ_TARGETS=... to pick); new crashing inputs
# land in build/fuzz/crashes/T/, the growing corpus in build/fuzz/corpus/T/
fuzz: fuzz-build
	./fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-check: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/check/%)
	@$(SUITE) $@ sh -c 'for t in $(FUZZ_TARGETS); do \
		ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		$(BUILD)/fuzz/check/$$t $$(ls -d tests/fuzz/corpus/$$t tests/fuzz/regress/$$t 2>/dev/null) \
		|| exit 1; \
	done'

# what make fuzz grew, minimised into tests/fuzz/corpus (then commit it)
fuzz-merge: fuzz-build
	./fuzz/merge.sh $(BUILD)/fuzz $(FUZZ_TARGETS)

# the seed corpora, from valid messages and files (fuzz/gen_corpus.c)
$(BUILD)/fuzz/gen_corpus: fuzz/gen_corpus.c net_abstraction/wire.c net_abstraction/nodeset.c \
                          $(PROTO_C) | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Werror,$(CFLAGS)) $(FUZZ_INC) -o $@ $^ -lprotobuf-c
fuzz-corpus: $(BUILD)/fuzz/gen_corpus
	@mkdir -p tests/fuzz/corpus
	$(BUILD)/fuzz/gen_corpus tests/fuzz/corpus
