# offsetagent: KIP-995 initial offsets for any distributed Kafka Connect cluster.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BENCH_SCALE ?= 1
FUZZTIME  ?= 15s
IMAGE     ?= offsetagent:$(VERSION)
# promtool, pinned as a Go tool dependency in a module of its own (tools/promtool/go.mod).
PROMTOOL  := $(GO) -C tools/promtool tool promtool

.DEFAULT_GOAL := help
.PHONY: help build test bench demo lint fmt tidy docker up fuzz chaos

help: ## Show this help
	@grep -hE '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## Build bin/offsetagent
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/offsetagent ./cmd/offsetagent

test: ## Run every test with the race detector (embedded broker; no services needed)
	$(GO) test -race -count=1 -timeout 15m ./...

bench: ## Run the Go benchmarks and the load scenarios (BENCH_SCALE=0.1 for a quick look)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2x ./offsetstore/ ./events/ ./handlers/...
	BENCH_SCALE=$(BENCH_SCALE) $(GO) run ./cmd/offsetagent-bench

demo: ## Embedded broker + agent + the seed example, printing the results and Connect's records
	$(GO) run ./cmd/offsetagent demo

fuzz: ## Fuzz the request decoder and the MirrorMaker 2 record decoders briefly
	$(GO) test -run '^$$' -fuzz FuzzDecodeRequest -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz FuzzDecodeCheckpoint -fuzztime $(FUZZTIME) ./mm2/
	$(GO) test -run '^$$' -fuzz FuzzDecodeOffsetSync -fuzztime $(FUZZTIME) ./mm2/

chaos: ## The chaos test at a larger size
	CHAOS_REQUESTS=150 $(GO) test -race -count=1 -run TestChaos -v -timeout 20m ./integration/

lint: ## go vet, gofmt check, and the alert rules: promtool check and unit tests
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(PROMTOOL) check rules $(abspath deploy/prometheus/alerts.yaml)
	$(PROMTOOL) test rules $(abspath $(wildcard deploy/prometheus/tests/*.yml))

fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')

tidy: ## Tidy go.mod
	$(GO) mod tidy

docker: ## Build the container image
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

up: ## Start Kafka, Connect, offsetagent, Prometheus and Grafana with compose
	VERSION=$(VERSION) COMMIT=$(COMMIT) docker compose -f deploy/compose/docker-compose.yml up --build
