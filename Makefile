# ftpatch: dynamic function tracing for user-space ELF programs.
#
#   make demo    builds everything, runs the bundled example through the pipeline
#   make test    installs what the tests need if missing, runs every test
#   make bench   benchmarks (long; not part of make test)
#   make fuzz    runs every fuzz target of the tree (FUZZTIME each, default 10m)
#   make install installs under PREFIX (default /usr/local); make uninstall removes it
#   make docs    regenerates the command pages of docs/commands

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin
FUZZTIME ?= 10m

.PHONY: all build demo test check deps fixtures bench fuzz clean

all: build

# What --version prints, stamped into the binaries (package internal/version):
# git describe, the commit, and whether the work tree had changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS = -X ftpatch/internal/version.version=$(VERSION) \
	-X ftpatch/internal/version.revision=$(shell git rev-parse HEAD 2>/dev/null) \
	-X ftpatch/internal/version.modified=$(shell [ -z "$$(git status --porcelain 2>/dev/null)" ] || echo true)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

demo: build
	@GO=$(GO) scripts/demo.sh

deps:
	@scripts/deps.sh

# test: formatting and vet, the checked-in fixtures rebuild identically
# from their sources, then every test (packages in parallel), reported as
# it goes by internal/cmd/testfmt: a line as each package starts and
# ends, with its time, what failed in full, and every minute what is
# still running. The end-to-end package (./tests) is named first so that
# it starts first: it is the longest, and the others run beside it. It
# runs every arm64 program under qemu and takes 5 minutes on two quiet
# cores, and as long as 27 on two shared with other work: TESTTIMEOUT,
# each package's time limit, is twice that.
TESTTIMEOUT ?= 60m
test: deps
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	$(GO) vet ./...
	@$(MAKE) --no-print-directory -s fixtures-check
	@$(GO) build -o build/testfmt ./internal/cmd/testfmt
	build/testfmt $(GO) test -json -timeout $(TESTTIMEOUT) ./tests ./...

bench: build
	@scripts/deps.sh bench
	$(GO) run ./bench/recordmcount
	$(GO) run ./bench/runtime
	$(GO) run ./bench/enable
	$(GO) run ./bench/trace
	$(GO) run ./bench/session
	$(GO) run ./bench/coverage

fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

clean:
	rm -rf $(BIN) build

# make install [PREFIX=/usr/local] [DESTDIR=]: ftpatch, recordmcount, the
# runtime (built now, for x86_64 and, with its cross compiler, arm64),
# ftrace.h, pkg-config files (ftrt), man pages and shell completion;
# make uninstall removes what the install's manifest lists
# (scripts/install.sh says where each goes). make docs regenerates the
# command pages of docs/commands from the commands.
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: install uninstall docs

install: build
	@BIN="$(BIN)" PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install.sh install

uninstall:
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install.sh uninstall

docs: build
	$(BIN)/ftpatch --gen-markdown docs/commands
	$(BIN)/recordmcount --gen-markdown docs/commands

-include mk/fixtures.mk
