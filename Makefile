# collab: see README.md.
GO ?= go

.PHONY: build test bench demo demo-watch fuzz

build:
	$(GO) build -o bin/collab ./cmd/collab

# staticcheck, pinned: `make test` fails on any finding.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# What CI runs (.ci/run): vet, staticcheck, every test with the race
# detector, then the fault scenarios (make faults).
test:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) test -race -count=1 ./...
	$(MAKE) faults

# The measurements quoted in the README.
bench:
	mkdir -p bin
	$(GO) run ./internal/dev/bench -json bin/bench.json

# A short run of every fuzz target (FUZZTIME=30s for longer).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# The shipped three-agent workflow (examples/standin) with the stand-in
# model, run to done by collab run; demo-watch is the two-watcher demo.
demo:
	./demo/workflow.sh

demo-watch:
	./demo/run.sh

# Fault scenarios (internal/dev/faults): real watchers and senders through
# SIGKILL, SIGSTOP, FUSE caches, readdir races, clock skew and garbage; exit
# 1 on any lost, duplicated or corrupt reply. FAULTS_FLAGS=--quick for fewer messages.
.PHONY: faults
faults:
	$(GO) build -o bin/collab-faults ./internal/dev/faults
	bin/collab-faults --json bin/faults.json $(FAULTS_FLAGS)
