# offsetagent: KIP-995 initial offsets for any distributed Kafka Connect cluster.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# What decides the packages the release build compiles (the Dockerfile's too): cgo off and
# -trimpath; LDFLAGS only change the link. make test's run without the race detector uses them.
RELEASE_ENV   := CGO_ENABLED=0
RELEASE_FLAGS := -trimpath
BENCH_SCALE ?= 1
BENCH_SCENARIOS ?= bulk latency many flat migrate view
# The JVM broker's rounds vary more than kfake's: make bench-real runs more of them.
BENCH_REAL_ROUNDS ?= 9
FUZZTIME  ?= 15s
IMAGE     ?= offsetagent:$(VERSION)
# promtool: Debian's prometheus package ships it (apt-get install prometheus; .ci/run installs it).
PROMTOOL  ?= promtool

.DEFAULT_GOAL := help
.PHONY: help build test test-memory test-real test-integration-real bench bench-real demo demo-migrate demo-real demo-cdc lint fmt tidy docker up fuzz chaos goldens crossings

help: ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

build: ## Build bin/offsetagent
	$(RELEASE_ENV) $(GO) build $(RELEASE_FLAGS) -ldflags '$(LDFLAGS)' -o bin/offsetagent ./cmd/offsetagent

# The real Kafka tier (integration/realkafka) runs JVM processes: java, and mvn for the first
# download of the jars. Without them its tests skip, unless OFFSETAGENT_REQUIRE_REAL_KAFKA=1.
REAL_KAFKA_SKIP = $(if $(shell command -v java),$(if $(shell command -v mvn),,mvn is not on the PATH (needed for the first jar download)),java is not on the PATH)

# make test runs two go test commands side by side. With the race detector: every package but
# the real-Kafka tier; there the property tests that compare two code paths over thousands of
# generated inputs take a sample (package internal/race). Without it: the real-Kafka tier (its
# Go code starts JVMs, PostgreSQL, MariaDB and the agent binary, which is built without it) -
# Apache Kafka 4.3.1 plain (realkafka) and secured (secured), Connect 3.9.1 (compat39), Debezium
# with PostgreSQL and MariaDB (cdc) - and the sampled packages again, whose property tests then
# run in full.
#
# A first run on an empty Go build cache compiles the standard library and every dependency once
# per set of build flags, so make test keeps to two: the race detector's, and the release build's
# (RELEASE_ENV, RELEASE_FLAGS), which the run without the race detector uses, as do the agents
# the tests build without it (package integration's crash and memory tests, the real tier's
# agent) and TestReleaseBuild. go test starts the packages' tests in the order given: the race
# detector's run gives package integration (RACE_FIRST_PKGS), the longest by far, first. Its
# crash matrices run six points at a time, and its tests that mostly wait out a timeout they
# set run side by side (integration/doc.go): RACE_PARALLEL lets them (go test's -parallel is
# GOMAXPROCS by default, two here).
#
# The run without the race detector starts two packages at once (go test's -p default): with
# three, the JVM tiers beside the race detector's run of package integration compete with it, the
# longest path on a quiet machine. Its run of package integration's memory tests vets nothing
# (-vet=off): the race detector's run vets that package, and vet's results are kept per set of
# build flags, so it would vet it and every package it imports again.
# testcontainers' Kafka replaces the brokers of package integration and of the real tier with
# OFFSETAGENT_TEST_DOCKER=1. Only a build with the docker tag links it: its dependencies are
# about a hundred packages nothing else uses, which a first run would compile twice (with and
# without the race detector). Without the tag that setting fails the tests, naming the tag.
TEST_TAGS := $(if $(filter 1,$(OFFSETAGENT_TEST_DOCKER)),-tags docker)
REAL_PKGS := ./integration/realkafka/...
RACE_FIRST_PKGS := ./integration/
RACE_PARALLEL := 6
RACE_SAMPLED_PKGS := ./handlers/ ./events/ ./internal/kafkaio/
# Tests of package integration that measure memory, which skip under the race detector.
NORACE_INTEGRATION_TESTS := ^(TestCompressedBacklogWithinInflightBytes|TestMemoryBoundedByInflightBytes)$$

test: ## Run the tests CI runs (embedded broker with the race detector; real Kafka, Connect, Debezium, PostgreSQL and MariaDB when java, mvn, PostgreSQL and MariaDB are installed)
	@$(if $(REAL_KAFKA_SKIP),echo "SKIP real Kafka tier (integration/realkafka): $(REAL_KAFKA_SKIP)$(if $(filter 1,$(OFFSETAGENT_REQUIRE_REAL_KAFKA)), - OFFSETAGENT_REQUIRE_REAL_KAFKA=1 makes that a failure,)",echo "real Kafka tier (integration/realkafka/...): Apache Kafka and Connect workers as JVM processes (4.3.1 plain and secured, 3.9.1), Debezium with PostgreSQL and MariaDB")
	@command -v $(PROMTOOL) >/dev/null || echo "SKIP alert rules' unit tests (deploy): promtool is not on the PATH (apt-get install prometheus)$(if $(filter 1,$(OFFSETAGENT_REQUIRE_PROMTOOL)), - OFFSETAGENT_REQUIRE_PROMTOOL=1 makes that a failure,)"
	@( $(RELEASE_ENV) $(GO) test $(RELEASE_FLAGS) $(TEST_TAGS) -count=1 -timeout 25m $(REAL_PKGS) $(RACE_SAMPLED_PKGS); a=$$?; \
	  $(RELEASE_ENV) $(GO) test $(RELEASE_FLAGS) $(TEST_TAGS) -count=1 -vet=off -timeout 5m -run '$(NORACE_INTEGRATION_TESTS)' ./integration/; b=$$?; \
	  [ $$a -eq 0 ] && [ $$b -eq 0 ] ) & real=$$!; \
	$(GO) test -race $(TEST_TAGS) -count=1 -parallel $(RACE_PARALLEL) -timeout 25m $(RACE_FIRST_PKGS) $$($(GO) list ./... | grep -v '/integration/realkafka'); fast=$$?; \
	wait $$real; real=$$?; \
	if [ $$fast -ne 0 ] || [ $$real -ne 0 ]; then echo "FAIL make test (race-detector run: $$fast, real-Kafka tier and full property tests: $$real)"; exit 1; fi

test-real: ## Run only the real Kafka tiers, verbosely (Apache Kafka brokers + Connect workers as JVM processes: 4.3.1, 3.9.1 in compat39; PostgreSQL, MariaDB + Debezium in cdc; TLS, SASL and ACLs in secured)
	$(RELEASE_ENV) $(GO) test $(RELEASE_FLAGS) $(TEST_TAGS) -count=1 -p 4 -v -timeout 15m $(REAL_PKGS)

bench: ## Run the Go benchmarks and the load scenarios (BENCH_SCALE=0.1 for a quick look)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2x ./offsetstore/ ./events/ ./handlers/...
	BENCH_SCALE=$(BENCH_SCALE) $(GO) run ./cmd/offsetagent-bench

test-integration-real: ## Run package integration against a real Apache Kafka broker (fault-injection tests skip)
	$(GO) run ./integration/realkafka/cmd/realkafka exec -no-worker -- $(GO) test -race -count=1 -timeout 15m ./integration/

bench-real: ## The load scenarios against real Apache Kafka: a fresh JVM broker per scenario, as kfake's
	$(GO) build -o bin/offsetagent-bench ./cmd/offsetagent-bench
	$(GO) build -o bin/realkafka ./integration/realkafka/cmd/realkafka
	@for s in $(BENCH_SCENARIOS); do \
		echo "== scenario $$s on a fresh Apache Kafka broker"; \
		bin/realkafka exec -no-worker -kafka-jvm -- env BENCH_SCALE=$(BENCH_SCALE) bin/offsetagent-bench -scenarios $$s -rounds $(BENCH_REAL_ROUNDS) || exit 1; \
	done

demo: ## Embedded broker + agent + the seed example, printing the results and Connect's records
	$(GO) run ./cmd/offsetagent demo

demo-migrate: ## Two Connect clusters on embedded brokers: the four verbs migrate plan, apply (and a re-run), verify and rollback (dry run, --execute), as a user sees them
	$(GO) run ./cmd/offsetagent demo-migrate

demo-real: ## Apache Kafka + a Connect worker + the agent: the seed example in Connect's own REST answers
	$(GO) run ./integration/realkafka/cmd/realkafka demo

demo-cdc: ## PostgreSQL -> Debezium -> Kafka A -> JDBC sink, moved to cluster B across MirrorMaker 2 while rows change
	$(GO) test -count=1 -v -timeout 15m -run 'TestPipelineMigratedAcrossMirrorMaker2/stop-source' ./integration/realkafka/cdc/

fuzz: ## Fuzz the request decoder, the MirrorMaker 2 record decoders, the client properties reader and its errors (no secret in them), planted secrets in manifests and messages, a Java regex moved behind a prefix, briefly
	$(GO) test -run '^$$' -fuzz FuzzDecodeRequest -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz FuzzDecodeCheckpoint -fuzztime $(FUZZTIME) ./mm2/
	$(GO) test -run '^$$' -fuzz FuzzDecodeOffsetSync -fuzztime $(FUZZTIME) ./mm2/
	$(GO) test -run '^$$' -fuzz '^FuzzParseProperties$$' -fuzztime $(FUZZTIME) ./internal/clientconfig/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCommandConfig$$' -fuzztime $(FUZZTIME) ./internal/clientconfig/
	$(GO) test -run '^$$' -fuzz '^FuzzSecretsNotInErrors$$' -fuzztime $(FUZZTIME) ./internal/clientconfig/
	$(GO) test -run '^$$' -fuzz '^FuzzPlantedSecrets$$' -fuzztime $(FUZZTIME) ./migrate/strimzi/
	$(GO) test -run '^$$' -fuzz '^FuzzAfterPrefix$$' -fuzztime $(FUZZTIME) ./internal/javaregex/

goldens: ## Regenerate the golden tables a real JVM answers (tools/oracle: Java, kafka-clients, Connect, MirrorMaker 2; GOLDENS="props regex" for some sets; java, and mvn for the first jar download)
	$(GO) run ./tools/oracle/cmd/goldens $(GOLDENS)

# The package crossings of the request path (docs/architecture.md, "The path of a request"):
# tools/crossings is a module of its own (golang.org/x/tools), so the product's go.mod gains
# nothing; about a minute on 2 cores, not part of make test. CROSSINGS_FLAGS=-v lists each edge.
crossings: ## Count the package crossings of the request path (static call graph from the agent's (*Agent).process; down, back up, side)
	cd tools/crossings && $(GO) run . paths $(CROSSINGS_FLAGS) -root '(*github.com/offsetagent/offsetagent/agent.Agent).process' -within github.com/offsetagent/offsetagent/agent ../../cmd/offsetagent

test-memory: ## The agent's peak RSS under the in-flight bound, every case (idle and busy machine, both bounds)
	OFFSETAGENT_TEST_MEMORY_MATRIX=1 $(GO) test -count=1 -run TestMemoryBoundedByInflightBytes -v -timeout 20m ./integration/

chaos: ## The chaos test at a larger size
	CHAOS_REQUESTS=150 $(GO) test -race -count=1 -run TestChaos -v -timeout 20m ./integration/

lint: ## go vet, gofmt check, and the alert rules: promtool check and unit tests (promtool from Debian's prometheus package)
	@command -v $(PROMTOOL) >/dev/null || (echo "promtool not found: apt-get install prometheus, or PROMTOOL=/path/to/promtool"; exit 1)
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
