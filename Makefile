# ftpatch: dynamic function tracing for user-space ELF programs.
#
#   make demo    builds everything, runs the bundled example through the pipeline
#   make test    installs what the tests need if missing, runs every test
#   make bench   benchmarks (long; not part of make test)
#   make fuzz    runs every fuzz target of the tree (FUZZTIME each, default 10m)

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin
FUZZTIME ?= 10m

.PHONY: all build demo test check deps fixtures bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

demo: build
	@GO=$(GO) scripts/demo.sh

deps:
	@scripts/deps.sh

# test: formatting and vet, the checked-in fixtures rebuild identically
# from their sources, then every test (packages in parallel). The
# end-to-end package runs every arm64 program under qemu and takes some
# minutes on two cores: its time limit is 30 minutes, not go test's 10.
test: deps
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	$(GO) vet ./...
	@$(MAKE) --no-print-directory -s fixtures-check
	$(GO) test -timeout 30m ./...

bench: build
	@scripts/deps.sh bench
	$(GO) run ./bench/recordmcount
	$(GO) run ./bench/runtime
	$(GO) run ./bench/enable
	$(GO) run ./bench/trace

fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

clean:
	rm -rf $(BIN) build

-include mk/fixtures.mk
