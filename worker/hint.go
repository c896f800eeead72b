package worker

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/updown/updown/store"
)

// Headers of a replay task: the market's record and its number of
// snapshots as the api read them to accept the request. The job's id
// holds the record's version (Job.Version), so the record is the one the
// job is about; a worker reads the market again only for a task without
// them (one enqueued by an api of an earlier version) or with ones it
// cannot read.
const (
	headerMarket    = "updown-market"
	headerSnapshots = "updown-snapshots"
)

// MarketHeaders are the headers that give a replay job its market's
// record and snapshot count.
func MarketHeaders(m store.Market, snapshots int) (map[string]string, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return map[string]string{headerMarket: string(raw), headerSnapshots: strconv.Itoa(snapshots)}, nil
}

// marketHint reads MarketHeaders back for the market with the slug; ok is
// false when the headers are missing, unreadable or of another market.
func marketHint(headers map[string]string, slug string) (m store.Market, snapshots int, ok bool) {
	raw, n := headers[headerMarket], headers[headerSnapshots]
	if raw == "" || n == "" {
		return m, 0, false
	}
	snapshots, err := strconv.Atoi(n)
	if err != nil || snapshots < 0 {
		return m, 0, false
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Slug != slug {
		return store.Market{}, 0, false
	}
	return m, snapshots, true
}

// headersKey is the context key of the running task's headers.
type headersKey struct{}

// taskHeaders are the headers of the task whose handler ctx belongs to.
func taskHeaders(ctx context.Context) map[string]string {
	h, _ := ctx.Value(headersKey{}).(map[string]string)
	return h
}
