# updown: the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
PKGS    ?= ./...
BENCH   ?= .

.PHONY: run test bench build lint fmt clean ui

## run: start the whole service on embedded defaults (no Postgres or Redis needed).
## The built binary replaces the shell (exec), so that Ctrl-C stops it cleanly
## (it exits 0) and make reports no error: make itself ends as any program that
## Ctrl-C stops (status 130), where under `go run`, which exits 1 when
## interrupted, it said "make: *** [run] Error 1".
run: build
	exec $(BIN) dev

## test: every test (unit, both stores, api over HTTP, workers over real Asynq)
test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## bench: Go benchmarks with their ratios to the floors they are compared with
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count=1 -timeout 30m $(PKGS)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
BIN     ?= bin/updown

## build: the one binary, in bin/ (where the Procfile runs it); `bin/updown version` names its commit
build:
	$(GO) build -ldflags "-X main.version=$(VERSION) -X github.com/updown/updown/jobs/transfer.version=$(VERSION)" -o $(BIN) ./cmd/updown

## lint: formatting, vet and staticcheck
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@latest $(PKGS)

## ui: rebuild the dashboard (web/) into api/dashboard from the npm lockfile;
## commit the result (go build embeds it and never needs Node)
ui:
	cd web && npm ci --no-audit --no-fund && npm run build

clean:
	rm -rf bin
