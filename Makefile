# cellfed — see README.md. `make run` starts the plane, `make test` tests it.
SHELL := /bin/bash
K8S_VERSION := v1.36.4
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
TREE := $(shell test -z "$$(git status --porcelain 2>/dev/null)" && echo clean || echo dirty)
BUILD_DATE := $(shell git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
# cellfed's release (VERSION; CHANGELOG.md says what each one changed): in
# every binary's version, the tag `make images` gives every image and the
# tag manifests/deploy pins (manifests' tests check they agree). Bump
# VERSION and manifests/deploy together when releasing.
VERSION ?= $(shell cat VERSION)
VERSION_PKG := k8s.io/component-base/version
LDFLAGS := -X $(VERSION_PKG).gitVersion=$(K8S_VERSION)+cellfed.$(VERSION).$(COMMIT) \
	-X $(VERSION_PKG).gitMajor=1 -X $(VERSION_PKG).gitMinor=36 \
	-X $(VERSION_PKG).gitCommit=$(COMMIT) -X $(VERSION_PKG).gitTreeState=$(TREE) \
	-X $(VERSION_PKG).buildDate=$(BUILD_DATE)
GO_BUILD := go build -ldflags '$(LDFLAGS)'
# Every go command here (build, vet, the images, the tests) compiles with
# the images' static-build tags (hack/images StaticTags, the Dockerfile's),
# so bin/, the images and the end-to-end tests share one compilation of
# each package in the build cache: on a new machine, with cold caches, a
# second set of tags would compile the whole dependency tree once more.
export GOFLAGS := $(GOFLAGS) -tags=netgo,osusergo,sqlite_omit_load_extension
DATA_DIR ?= .cellfed
REGISTRY ?= ghcr.io/cellfed
IMAGES ?= cellfed-apiserver cellfed-controller cellfed-agent cellfed-kms cellfed-webhook cellfed-proxy
IMAGES_DIR ?= _output/images
TEST_TIMEOUT ?= 20m
E2E_TIMEOUT ?= 45m

.PHONY: all build kubectl kubefed helm run demo test test-unit previous bench scale soak fuzz mariadb postgres chromium prometheus board-screenshots fmt vet clean images lint

all: build

# go build caches packages, so a rebuild after a small change only relinks.
# bin/kubectl-cellfed is cellfedctl as the kubectl plugin `kubectl cellfed`.
build:
	$(GO_BUILD) -o bin/ ./cmd/cellfed-apiserver ./cmd/cellfed-controller ./cmd/cellfedctl ./cmd/cellfed-webhook ./cmd/cellfed-agent ./cmd/cellfed-proxy ./cmd/cellfed-kms ./test/member-apiserver
	ln -f bin/cellfedctl bin/kubectl-cellfed 2>/dev/null || cp -f bin/cellfedctl bin/kubectl-cellfed

# Tests drive the real kubectl: the one on PATH, or one built from the
# Kubernetes module we depend on when the machine has none.
kubectl:
	@command -v kubectl >/dev/null 2>&1 || test -x bin/kubectl || { echo "no kubectl on PATH: building bin/kubectl"; $(GO_BUILD) -o bin/kubectl k8s.io/kubernetes/cmd/kubectl; }

# Upstream KubeFed v0.10.0's controller-manager (a peer controller) and its
# CLI kubefedctl, for the e2e tests and for KubeFed users, built unmodified
# from their own module in hack/kubefed (KubeFed's k8s 0.22 deps) and
# stamped with KubeFed's version, as its release builds are.
KUBEFED_LDFLAGS = -X sigs.k8s.io/kubefed/pkg/version.version=$$(go list -m -f '{{.Version}}' sigs.k8s.io/kubefed)
kubefed:
	cd hack/kubefed && go build -ldflags "$(KUBEFED_LDFLAGS)" -o ../../bin/kubefed-controller-manager sigs.k8s.io/kubefed/cmd/controller-manager
	cd hack/kubefed && go build -ldflags "$(KUBEFED_LDFLAGS)" -o ../../bin/kubefedctl sigs.k8s.io/kubefed/cmd/kubefedctl

# Helm v4, unmodified, from its own module in hack/helm (Helm's Kubernetes
# dependencies stay out of the main module), for the native-objects tests
# (test/e2e/helm_test.go) and docs/native-objects.md.
HELM_LDFLAGS = -X helm.sh/helm/v4/internal/version.version=$$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
helm:
	cd hack/helm && go build -ldflags "$(HELM_LDFLAGS)" -o ../../bin/helm helm.sh/helm/v4/cmd/helm

# The plane and cellfed-controller; Ctrl-C stops both, data is kept. ARGS go
# to cellfed-apiserver, CONTROLLER_ARGS to cellfed-controller (hack/run.sh).
run: build kubectl
	DATA_DIR='$(DATA_DIR)' CONTROLLER_ARGS='$(CONTROLLER_ARGS)' hack/run.sh $(ARGS)

# A throwaway federation in a temp dir: plane, controller, three members,
# cells, a released app, then grayscale, readiness, disaster recovery, undo
# and an app team's identity (hack/demo.sh). DEMO_EXIT=1 exits when done,
# DEMO_STEP=1 pauses before each step.
demo: build kubectl
	hack/demo.sh

mariadb:
	hack/mariadb.sh

postgres:
	hack/postgres.sh

# Debian's Chromium for the browser tests (TestBoard drives it with chromedp).
chromium:
	hack/chromium.sh

# Debian's prometheus and promtool for the monitoring tests
# (manifests/monitoring and TestMonitoringMetrics).
prometheus:
	hack/prometheus.sh

# Regenerates docs/images/board-*.png: TestBoard writes the screenshots.
board-screenshots: build chromium
	CELLFED_BOARD_SCREENSHOTS=$(CURDIR)/docs/images go test -count=1 -run 'TestBoard$$' ./test/e2e/

# The whole suite: unit tests, storage tests on SQLite and MariaDB, and
# end-to-end tests with kubectl against real processes. images first: the
# image test (hack/images) runs the tarballs it leaves in _output/images.
test: build kubectl kubefed helm mariadb postgres chromium prometheus vet images previous
	TEST_TIMEOUT=$(TEST_TIMEOUT) E2E_TIMEOUT=$(E2E_TIMEOUT) hack/test.sh ./...

# The previous release (the commit hack/upgrade/previous names), built
# offline from this repository's history in its own worktree into
# _output/previous/<commit>/bin, for the upgrade test
# (test/e2e/upgrade_test.go). Built once; later runs reuse it.
previous:
	hack/upgrade/build-previous.sh

test-unit:
	go test -race -count=1 ./pkg/...

# BenchmarkScale runs here in a smoke size (two cell steps on 20 logical
# members, 2,000 placements: about 2 min); `make scale` runs it in full.
SCALE_SMOKE := CELLFED_SCALE_CELLS=10,50 CELLFED_SCALE_MEMBERS=20 CELLFED_SCALE_REAL_MEMBERS=2 \
	CELLFED_SCALE_PLACEMENTS=2000 CELLFED_SCALE_SAMPLES=20
bench: build kubefed mariadb postgres chromium
	go test -count=1 -run '^$$' -bench . -benchtime 2s ./pkg/conversion/
	$(SCALE_SMOKE) go test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 30m ./test/bench/

# The scale simulation (docs/scale.md): cellfed-controller's cost curve to
# 1,000 cells on 100 members and 100,000 placements, against real member
# kube-apiservers each serving 25 logical members (test/simfront). It
# rewrites docs/scale-data.md and docs/images/scale-*.png; 30-40 min
# on 2 loaded cores. Not part of `make test`; `make bench` runs a smoke size. The
# CELLFED_SCALE_* variables (test/bench/scale_bench_test.go) resize it.
scale: build
	CELLFED_SCALE_OUT=$(CURDIR)/docs go test -count=1 -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 60m ./test/bench/

# The fault soak (docs/soak.md): two plane replicas on a private MariaDB,
# cellfed-controller, four members (one tunnelled from a network
# namespace) and releases in three tenants for SOAKTIME while processes
# are SIGKILLed, MariaDB frozen and the tunnel dropped; fails on any
# invariant violation. Report in _output/soak (summary.md, rss.csv,
# rss.png). Needs root (network namespace). Not part of `make test`.
SOAKTIME ?= 10m
SOAK_TIMEOUT ?= 3h
soak: build kubectl
	CELLFED_SOAK_TIME=$(SOAKTIME) CELLFED_SOAK_OUT=$(CURDIR)/_output/soak \
		go test -count=1 -v -run '^TestSoak$$' -timeout $(SOAK_TIMEOUT) ./test/soak/

# Go's native fuzzing, one target at a time for FUZZTIME each (go test
# fuzzes one target of one package per run). Not part of `make test`,
# which replays the committed corpus (testdata/fuzz) as ordinary tests. A
# crash leaves its input under the package's testdata/fuzz/<target>/:
# commit it with the fix. FUZZ_TARGETS=pkg:Target ... runs a subset.
# Go 1.26's coordinator can end a run whose -fuzztime expired with
# "context deadline exceeded" and no failing input (golang/go#75804, fixed
# in Go 1.27): a run fails here only when it wrote a failing input or
# failed otherwise.
FUZZTIME ?= 60s
FUZZ_TARGETS ?= \
	./pkg/admission:FuzzAdmitFederated ./pkg/admission:FuzzAdmitCell \
	./pkg/admission:FuzzValidateRegistration \
	./pkg/conversion:FuzzConvertSpec ./pkg/conversion:FuzzRoundTrip ./pkg/conversion:FuzzReview \
	./pkg/proxy:FuzzAgentMetadata ./pkg/proxy:FuzzConnectAuth ./pkg/proxy/agent:FuzzRewriteDial
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		dir=$$pkg/testdata/fuzz/$$name; before=$$(ls $$dir 2>/dev/null | wc -l); \
		out=$$(mktemp); \
		if go test -count=1 -timeout 0 -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg 2>&1 | tee $$out; test $${PIPESTATUS[0]} -eq 0; then rm -f $$out; continue; fi; \
		after=$$(ls $$dir 2>/dev/null | wc -l); \
		if [ "$$after" = "$$before" ] && grep -q '^    context deadline exceeded$$' $$out && ! grep -q 'Failing input' $$out; then \
			echo "fuzz $$name: ended by Go's fuzztime race (golang/go#75804), no failing input"; rm -f $$out; continue; fi; \
		rm -f $$out; exit 1; \
	done

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	go vet ./...

clean:
	rm -rf bin _output

# golangci-lint, pinned in hack/lint/go.mod (a module of its own, so its
# dependencies move neither ours nor controller-gen's), built once into
# bin/; the linters are chosen in .golangci.yml.
GOLANGCI_LINT := bin/golangci-lint
$(GOLANGCI_LINT): hack/lint/go.mod hack/lint/go.sum
	go build -modfile=hack/lint/go.mod -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...

# OCI image tarballs, one per binary, without a Docker engine or network
# (hack/images): $(IMAGES_DIR)/<binary>.tar, named $(REGISTRY)/<binary>:$(VERSION),
# a static binary on an empty base, running as 65532:65532. Load one with
# `docker load -i _output/images/cellfed-apiserver.tar` (or podman load),
# push it with `crane push`. The Dockerfile builds the same for Docker users.
images:
	go run ./hack/images -registry '$(REGISTRY)' -version '$(VERSION)' \
		-revision "$$(git rev-parse HEAD 2>/dev/null || echo unknown)" -created '$(BUILD_DATE)' \
		-ldflags '$(LDFLAGS)' -out '$(IMAGES_DIR)' $(IMAGES)

.PHONY: manifests verify-manifests generate

# CRDs in manifests/crds, generated by controller-gen (pinned in hack/tools)
# from KubeFed's API types and ours; see hack/manifests.sh.
manifests:
	hack/manifests.sh

# Fails if manifests/crds differs from what the Go types generate now.
verify-manifests:
	hack/manifests.sh --verify

# Deep-copy functions for cellfed's own API types.
generate:
	go run k8s.io/code-generator/cmd/deepcopy-gen@v0.36.4 --go-header-file hack/boilerplate.go.txt --output-file zz_generated.deepcopy.go ./pkg/apis/core/v1alpha1 ./pkg/apis/policy/v1alpha1
