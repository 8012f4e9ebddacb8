# mk/fixtures.mk: the binary fixtures in sites/testdata.
#
# Included from the top-level Makefile (paths are relative to the
# repository root); `make fixtures` rebuilds every object, and
# `make fixtures-check` rebuilds them and fails if any differs from the
# checked-in bytes, so CI can prove they are reproducible.
#
# An object's name says how it is built and nothing else does:
#
#	<case>-<arch>-<cc>-<token>-<token>...o
#
# <case> is the source (<case>.c, <case>.cc for C++, or <case>.S for
# assembly run through the C compiler's preprocessor), <arch> and <cc>
# pick the compiler from FIXTURE_CC_<arch>_<cc>_<lang>, and each token
# maps through FIXTURE_FLAG_<token> to compiler flags, in order. An
# unknown token is an error, so a name cannot lie about its flags.

FIXTURE_DIR := sites/testdata

# fixture_cross,CASE-ARCH-CC,LEVELS,VARIANTS: one object per optimization
# level and flag variant.
fixture_cross = $(foreach v,$(3),$(foreach o,$(2),$(1)-$(o)-$(v)))

# basic: every site-producing flag set at -O0 and -O2, by both compilers
# (-mrecord-mcount is gcc's alone; -O3 once), and on arm64 at -O2, each
# with and without BTI.
FIXTURE_BASIC_X86 := pg-mfentry pg-mfentry-nopie pg pfe5 pg-mfentry-cet ffs-pg-mfentry
FIXTURE_BASIC_ARM64 := $(foreach v,pfe2 pfe4_2-align8 pfe4_2 pg,$(v) $(v)-bti)

FIXTURE_OBJS := \
	$(call fixture_cross,basic-x86_64-gcc,O0 O2,$(FIXTURE_BASIC_X86) pg-mfentry-mrecord) \
	basic-x86_64-gcc-O3-pg-mfentry \
	$(call fixture_cross,basic-x86_64-clang,O0 O2,$(FIXTURE_BASIC_X86)) \
	$(call fixture_cross,basic-arm64-gcc,O2,$(FIXTURE_BASIC_ARM64)) \
	$(call fixture_cross,basic-arm64-clang,O2,$(FIXTURE_BASIC_ARM64)) \
	weak-x86_64-gcc-O2-ffs-nounwind-pg-mfentry \
	weak-x86_64-gcc-O2-ffs-nounwind-pg-mfentry-nopie \
	weak-x86_64-gcc-O2-ffs-nounwind-pg \
	weak-x86_64-clang-O2-ffs-nounwind-pg-mfentry \
	weak-arm64-gcc-O2-ffs-nounwind-pg \
	cxx-x86_64-gcc-O0-pg-mfentry \
	cxx-x86_64-gcc-O2-pg-mfentry \
	cxx-x86_64-gcc-O0-pg-mfentry-mrecord \
	cxx-x86_64-gcc-O0-pfe5 \
	cxx-x86_64-clang-O0-pg-mfentry \
	cxx-arm64-clang-O0-pfe4_2-align8 \
	cxx-arm64-clang-O0-pg \
	tailcall-arm64-gcc-pg \
	shapes-x86_64-gcc-O0-pg-mfentry \
	shapes-x86_64-gcc-O2-pg-mfentry \
	shapes-x86_64-gcc-O2-pg-mfentry-nopie \
	shapes-x86_64-gcc-O2-pg-mfentry-cet \
	shapes-x86_64-gcc-O2-pg \
	shapes-x86_64-gcc-O2-pfe5-pg-mfentry \
	shapes-x86_64-gcc-O2-pfe5-pg-mfentry-cet \
	shapes-x86_64-gcc-O2-pg-mfentry-mrecord \
	shapes-x86_64-clang-O2-pg-mfentry \
	shapes-x86_64-clang-O2-pfe5-pg-mfentry-cet

# Compilers, by architecture, compiler family and language. Clang is
# given its target even on an x86-64 host, so the objects do not depend on
# the host. Override the gcc ones on a host whose gcc is not x86-64.
FIXTURE_CC_x86_64_gcc_c    ?= gcc
FIXTURE_CC_x86_64_gcc_cc   ?= g++
FIXTURE_CC_x86_64_clang_c  ?= clang --target=x86_64-linux-gnu
FIXTURE_CC_x86_64_clang_cc ?= clang++ --target=x86_64-linux-gnu
FIXTURE_CC_arm64_gcc_c     ?= aarch64-linux-gnu-gcc
FIXTURE_CC_arm64_clang_c   ?= clang --target=aarch64-linux-gnu
FIXTURE_CC_arm64_clang_cc  ?= clang++ --target=aarch64-linux-gnu

# Name tokens and the flags they stand for.
FIXTURE_FLAG_O0       := -O0
FIXTURE_FLAG_O2       := -O2
FIXTURE_FLAG_O3       := -O3
FIXTURE_FLAG_pg       := -pg
FIXTURE_FLAG_mfentry  := -mfentry
FIXTURE_FLAG_nopie    := -fno-pie
FIXTURE_FLAG_mrecord  := -mrecord-mcount
FIXTURE_FLAG_cet      := -fcf-protection
FIXTURE_FLAG_ffs      := -ffunction-sections
FIXTURE_FLAG_nounwind := -fno-asynchronous-unwind-tables -fno-unwind-tables
FIXTURE_FLAG_pfe5     := -fpatchable-function-entry=5
FIXTURE_FLAG_pfe2     := -fpatchable-function-entry=2
FIXTURE_FLAG_pfe4_2   := -fpatchable-function-entry=4,2
FIXTURE_FLAG_align8   := -falign-functions=8
FIXTURE_FLAG_bti      := -mbranch-protection=standard

# Flags every fixture gets: no debug information, and the build directory
# mapped away so nothing in an object depends on where the tree lives.
FIXTURE_COMMON := -c -ffile-prefix-map=$(CURDIR)=.

FIXTURE_PATHS := $(FIXTURE_OBJS:%=$(FIXTURE_DIR)/%.o)

fixture_words  = $(subst -, ,$(1))
fixture_case   = $(word 1,$(call fixture_words,$(1)))
fixture_arch   = $(word 2,$(call fixture_words,$(1)))
fixture_cc     = $(word 3,$(call fixture_words,$(1)))
fixture_tokens = $(wordlist 4,$(words $(call fixture_words,$(1))),$(call fixture_words,$(1)))
fixture_src    = $(or $(firstword $(wildcard $(foreach x,c cc S,$(FIXTURE_DIR)/$(call fixture_case,$(1)).$(x)))),$(error fixtures: $(1): no source $(FIXTURE_DIR)/$(call fixture_case,$(1)).c, .cc or .S))
fixture_lang   = $(if $(filter %.cc,$(call fixture_src,$(1))),cc,c)
fixture_flag   = $(if $(filter undefined,$(origin FIXTURE_FLAG_$(2))),$(error fixtures: $(1): unknown name token "$(2)" (see FIXTURE_FLAG_* in mk/fixtures.mk)),$(FIXTURE_FLAG_$(2)))
fixture_comp   = $(or $(FIXTURE_CC_$(call fixture_arch,$(1))_$(call fixture_cc,$(1))_$(call fixture_lang,$(1))),$(error fixtures: $(1): no compiler FIXTURE_CC_$(call fixture_arch,$(1))_$(call fixture_cc,$(1))_$(call fixture_lang,$(1))))

# One rule per object. Each also depends on a phony target, so that
# `make fixtures` always rebuilds: the point is to show the checked-in
# bytes are what the flags produce, not to build incrementally.
define fixture_rule
$(FIXTURE_DIR)/$(1).o: $(call fixture_src,$(1)) fixtures-force
	$(call fixture_comp,$(1)) $(foreach t,$(call fixture_tokens,$(1)),$(call fixture_flag,$(1),$(t))) $(FIXTURE_COMMON) -o $$@ $$<
endef

# Defining rules here must not change the including Makefile's default goal.
fixture_saved_goal := $(.DEFAULT_GOAL)
$(foreach o,$(FIXTURE_OBJS),$(eval $(call fixture_rule,$(o))))

.PHONY: fixtures fixtures-check fixtures-force
fixtures: $(FIXTURE_PATHS)

# fixture_check,PATHS: the recipe that fails unless the files rebuilt are
# byte for byte the checked-in ones, and every one is checked in.
define fixture_check
	@git diff --stat --exit-code -- $(1)
	@untracked=$$(git ls-files --others -- $(1)); \
	if [ -n "$$untracked" ]; then echo "fixtures: not checked in:" $$untracked; exit 1; fi
endef

fixtures-check: fixtures
	$(call fixture_check,$(FIXTURE_PATHS))

fixtures-force:

.DEFAULT_GOAL := $(fixture_saved_goal)

# Linked fixtures (sites/testdata/linked): small programs and shared
# objects for `ftpatch sites`, linked without libc against the stand-in
# hooks of runtime/stub rather than the runtime, so that changing the
# runtime does not change them. Named like the objects, without a suffix:
# <case>-<arch>-<cc>-<token>..., the source <case>.c or <case>.S beside
# them. Tokens beyond the compile flags above:
#
#	g       -g (DWARF 5: the default of gcc 12 and clang 14)
#	dwarf4  -gdwarf-4
#	gz      -gz, and the linker keeps the debug sections zlib-compressed
#	nopie   also links with -no-pie
#	shared  compiles with -fPIC, links with -shared
#	rec     runs recordmcount on the object before linking
#	strip   links with -s: no .symtab
#
# The object goes through build/fixtures; recordmcount is built there from
# this tree, so a change in what it writes shows in fixtures-check.

FIXTURE_LINKED_DIR := sites/testdata/linked

FIXTURE_LINKED := \
	prog-x86_64-gcc-O2-g-pg-mfentry-rec \
	prog-x86_64-gcc-O2-g-pg-mfentry-nopie-rec \
	prog-x86_64-gcc-O2-pg-mfentry-mrecord-nopie \
	prog-x86_64-gcc-O2-g-pg-rec \
	prog-x86_64-clang-O2-g-pg-mfentry-rec \
	prog-x86_64-gcc-O2-g-pfe5-rec \
	prog-x86_64-gcc-O2-dwarf4-pg-mfentry-rec \
	prog-x86_64-gcc-O2-g-gz-pg-mfentry-nopie-rec \
	prog-x86_64-gcc-O2-g-pg-mfentry-shared-rec \
	prog-x86_64-gcc-O2-pg-mfentry-rec-strip \
	prog-arm64-gcc-O2-g-pfe4_2-align8-rec \
	prog-arm64-gcc-O2-g-pfe2-rec \
	prog-arm64-gcc-O2-g-pg-rec \
	callsx86-x86_64-gcc-shared \
	callsarm64-arm64-gcc-shared \
	shapes-x86_64-gcc-O2-g-pfe5-pg-mfentry-rec \
	shapes-x86_64-gcc-O2-pg-mfentry-mrecord-nopie

FIXTURE_FLAG_g      := -g
FIXTURE_FLAG_dwarf4 := -gdwarf-4
FIXTURE_FLAG_gz     := -gz
FIXTURE_FLAG_shared := -fPIC
FIXTURE_FLAG_rec    :=
FIXTURE_FLAG_strip  :=

FIXTURE_LINK_nopie  := -no-pie
FIXTURE_LINK_shared := -shared
FIXTURE_LINK_gz     := -Wl,--compress-debug-sections=zlib
FIXTURE_LINK_strip  := -s

# No libc, no build ID (it would differ per build), no padding pages.
FIXTURE_LINK_COMMON := -nostdlib -Wl,--build-id=none -Wl,-z,noseparate-code \
	-Wl,-z,max-page-size=4096 -Wl,-z,common-page-size=4096

FIXTURE_STUB_x86_64 := runtime/stub/hooks_x86_64.S
FIXTURE_STUB_arm64  := runtime/stub/hooks_arm64.S

FIXTURE_BUILD        := build/fixtures
FIXTURE_RECORDMCOUNT := $(FIXTURE_BUILD)/recordmcount

FIXTURE_LINKED_PATHS := $(FIXTURE_LINKED:%=$(FIXTURE_LINKED_DIR)/%)

fixture_linked_src = $(or $(firstword $(wildcard $(foreach x,c S,$(FIXTURE_LINKED_DIR)/$(call fixture_case,$(1)).$(x)))),$(error fixtures: $(1): no source $(FIXTURE_LINKED_DIR)/$(call fixture_case,$(1)).c or .S))
fixture_has    = $(filter $(2),$(call fixture_tokens,$(1)))
fixture_ccl    = $(or $(FIXTURE_CC_$(call fixture_arch,$(1))_$(call fixture_cc,$(1))_c),$(error fixtures: $(1): no compiler FIXTURE_CC_$(call fixture_arch,$(1))_$(call fixture_cc,$(1))_c))
fixture_link   = $(FIXTURE_LINK_COMMON) $(if $(call fixture_has,$(1),shared),,-Wl,-e,main) $(foreach t,$(call fixture_tokens,$(1)),$(FIXTURE_LINK_$(t)))

# The hooks are assembled to an object of a fixed name first: given the
# .S, the driver would link a temporary object, whose random name the
# arm64 linker writes into the symbol table.
define fixture_linked_rule
$(FIXTURE_LINKED_DIR)/$(1): $(call fixture_linked_src,$(1)) $(FIXTURE_STUB_$(call fixture_arch,$(1))) $(FIXTURE_RECORDMCOUNT) fixtures-force
	@mkdir -p $(FIXTURE_BUILD)/$(1)
	$(call fixture_ccl,$(1)) $(foreach t,$(call fixture_tokens,$(1)),$(call fixture_flag,$(1),$(t))) $(FIXTURE_COMMON) -o $(FIXTURE_BUILD)/$(1)/$(call fixture_case,$(1)).o $$<
	$(if $(call fixture_has,$(1),rec),$(FIXTURE_RECORDMCOUNT) $(FIXTURE_BUILD)/$(1)/$(call fixture_case,$(1)).o)
	$(call fixture_ccl,$(1)) $(FIXTURE_COMMON) -o $(FIXTURE_BUILD)/$(1)/hooks.o $(FIXTURE_STUB_$(call fixture_arch,$(1)))
	$(call fixture_ccl,$(1)) $(call fixture_link,$(1)) -o $$@ $(FIXTURE_BUILD)/$(1)/$(call fixture_case,$(1)).o $(FIXTURE_BUILD)/$(1)/hooks.o
endef

fixture_saved_goal := $(.DEFAULT_GOAL)
$(foreach o,$(FIXTURE_LINKED),$(eval $(call fixture_linked_rule,$(o))))

$(FIXTURE_RECORDMCOUNT): fixtures-force
	$(GO) build -o $@ ./cmd/recordmcount

.PHONY: fixtures-linked
fixtures: fixtures-linked
fixtures-linked: $(FIXTURE_LINKED_PATHS)

fixtures-check: fixtures-check-linked
fixtures-check-linked: fixtures-linked
	$(call fixture_check,$(FIXTURE_LINKED_PATHS))

.DEFAULT_GOAL := $(fixture_saved_goal)
