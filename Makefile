# cellfed — see README.md. `make run` starts the plane, `make test` tests it.
SHELL := /bin/bash
K8S_VERSION := v1.36.4
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
TREE := $(shell test -z "$$(git status --porcelain 2>/dev/null)" && echo clean || echo dirty)
BUILD_DATE := $(shell git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
VERSION_PKG := k8s.io/component-base/version
LDFLAGS := -X $(VERSION_PKG).gitVersion=$(K8S_VERSION)+cellfed.$(COMMIT) \
	-X $(VERSION_PKG).gitMajor=1 -X $(VERSION_PKG).gitMinor=36 \
	-X $(VERSION_PKG).gitCommit=$(COMMIT) -X $(VERSION_PKG).gitTreeState=$(TREE) \
	-X $(VERSION_PKG).buildDate=$(BUILD_DATE)
GO_BUILD := go build -ldflags '$(LDFLAGS)'
DATA_DIR ?= .cellfed
TEST_TIMEOUT ?= 20m

.PHONY: all build kubectl run test test-unit bench mariadb fmt vet clean

all: build

# go build caches packages, so a rebuild after a small change only relinks.
build:
	$(GO_BUILD) -o bin/ ./cmd/cellfed-apiserver ./test/member-apiserver

# Tests drive the real kubectl: the one on PATH, or one built from the
# Kubernetes module we depend on when the machine has none.
kubectl:
	@command -v kubectl >/dev/null 2>&1 || test -x bin/kubectl || { echo "no kubectl on PATH: building bin/kubectl"; $(GO_BUILD) -o bin/kubectl k8s.io/kubernetes/cmd/kubectl; }

run: build
	@echo "Starting cellfed-apiserver on embedded SQLite in $(DATA_DIR) (Ctrl-C stops it; data is kept)."
	@echo "In another shell:  export KUBECONFIG=$(abspath $(DATA_DIR))/admin.kubeconfig; kubectl get namespaces"
	./bin/cellfed-apiserver --data-dir=$(DATA_DIR) $(ARGS)

mariadb:
	hack/mariadb.sh

# The whole suite: unit tests, storage tests on SQLite and MariaDB, and
# end-to-end tests with kubectl against real processes.
test: build kubectl mariadb vet
	TEST_TIMEOUT=$(TEST_TIMEOUT) hack/test.sh ./...

test-unit:
	go test -count=1 ./pkg/...

bench: build mariadb
	go test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 30m ./test/bench/

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	go vet ./...

clean:
	rm -rf bin
