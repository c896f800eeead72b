package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/updown/updown/store"
)

// Headers of a replay task: the market's record and its number of
// snapshots as the api read them to accept the request. The job's id
// holds the record's version (Job.Version), so the record is the one the
// job is about; a worker reads the market again for a task without them
// (one enqueued by an api of an earlier version), with ones it cannot
// read, or with a record of another shape than its own (headerSchema).
const (
	headerMarket    = "updown-market"
	headerSnapshots = "updown-snapshots"
	headerDropped   = "updown-snapshots-dropped"
	headerSchema    = "updown-market-schema"
)

// marketSchema fingerprints store.Market's fields, their names and types:
// an api and a worker of versions whose Market differs (a field added or
// renamed, during a rolling upgrade) do not agree on it, and the worker
// reads the market itself rather than a record with a field read as zero.
var marketSchema = schemaOf(reflect.TypeFor[store.Market]())

// schemaOf is a hash of t's shape: for a struct of the store package, its
// fields' names and shapes in order, else the type's name.
func schemaOf(t reflect.Type) string {
	var shape func(t reflect.Type) string
	shape = func(t reflect.Type) string {
		switch t.Kind() {
		case reflect.Pointer:
			return "*" + shape(t.Elem())
		case reflect.Slice:
			return "[]" + shape(t.Elem())
		case reflect.Struct:
			if t.PkgPath() != reflect.TypeFor[store.Market]().PkgPath() {
				return t.String()
			}
			var b strings.Builder
			b.WriteString(t.Name() + "{")
			for i := range t.NumField() {
				f := t.Field(i)
				b.WriteString(f.Name + " " + shape(f.Type) + ";")
			}
			return b.String() + "}"
		}
		return t.String()
	}
	sum := sha256.Sum256([]byte(shape(t)))
	return hex.EncodeToString(sum[:8])
}

// MarketHeaders are the headers that give a replay job its market's
// record and snapshot counts (store.GetMarketSeries): the number of its
// snapshots, and the number drops of old months took, which together tell
// the worker's cache whether its copy is current.
func MarketHeaders(m store.Market, sc store.SeriesCount) (map[string]string, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return map[string]string{headerMarket: string(raw), headerSnapshots: strconv.Itoa(sc.N),
		headerDropped: strconv.Itoa(sc.Dropped), headerSchema: marketSchema}, nil
}

// marketHint reads MarketHeaders back for the market with the slug; ok is
// false when the headers are missing (an api of an earlier version sends
// no count of dropped snapshots), unreadable or of another market.
func marketHint(headers map[string]string, slug string) (m store.Market, sc store.SeriesCount, ok bool) {
	raw, n, d := headers[headerMarket], headers[headerSnapshots], headers[headerDropped]
	if raw == "" || n == "" || d == "" || headers[headerSchema] != marketSchema {
		return m, sc, false
	}
	var err1, err2 error
	sc.N, err1 = strconv.Atoi(n)
	sc.Dropped, err2 = strconv.Atoi(d)
	if err1 != nil || err2 != nil || sc.N < 0 || sc.Dropped < 0 {
		return m, store.SeriesCount{}, false
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Slug != slug {
		return store.Market{}, store.SeriesCount{}, false
	}
	return m, sc, true
}

// headersKey is the context key of the running task's headers.
type headersKey struct{}

// taskHeaders are the headers of the task whose handler ctx belongs to.
func taskHeaders(ctx context.Context) map[string]string {
	h, _ := ctx.Value(headersKey{}).(map[string]string)
	return h
}
