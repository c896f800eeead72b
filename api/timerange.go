package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"time"
)

// Time series by time (DESIGN 13): the snapshot pages, market trades and
// depth history take a time range, an order and a keyset cursor beside
// SPEC's offset paging.

// seriesQuery is a time-series request's selection: its range, its order
// and, when it continues a walk, the position after which it goes on.
type seriesQuery struct {
	From, To  *time.Time
	Ascending bool
	After     *time.Time
	// AfterKey is the rest of the position past its time, for a series
	// whose elements can share an instant (market trades: the trade's key);
	// empty for the others.
	AfterKey []byte
	// scope is what the cursor is bound to: the series (route and market)
	// and the query (range and order).
	scope []byte
}

// seriesParams are the raw time-series query parameters.
type seriesParams struct {
	StartTime, EndTime, Order, Cursor string
	Offset                            int
}

// cursorVersion is the first byte of a cursor, so their form can change.
const cursorVersion = 1

// maxCursorMicros is the latest position a cursor may hold, the end of
// year 9999 in Unix microseconds; the earliest is the epoch. A cursor is
// not signed, so anyone can write one: its position is checked to be a
// time the stores can hold and the time parameters accept (issue 28, item
// 7: years -5000 or 300,000 failed in Postgres as 500, and the largest
// time wrapped round to the first page).
const maxCursorMicros = 253402300799999999

// parseSeriesQuery reads the parameters of a request on series (the route
// and the market: a cursor of one series is refused on another). With
// endInclusive, end_time keeps what is at it (depth history, as SPEC says);
// otherwise the range is [start_time, end_time).
func parseSeriesQuery(series string, p seriesParams, endInclusive bool) (seriesQuery, error) {
	var q seriesQuery
	var err error
	if q.From, err = parseTimeParam("query.start_time", p.StartTime); err != nil {
		return q, err
	}
	if q.To, err = parseTimeParam("query.end_time", p.EndTime); err != nil {
		return q, err
	}
	if q.From != nil && q.To != nil {
		if endInclusive && q.To.Before(*q.From) {
			return q, invalidParam("query.end_time", p.EndTime, "end_time must not be earlier than start_time")
		}
		if !endInclusive && !q.From.Before(*q.To) {
			return q, invalidParam("query.end_time", p.EndTime, "end_time must be later than start_time (the range is start_time inclusive to end_time exclusive)")
		}
	}
	// The stores keep microseconds: a bound finer than that holds what it
	// says once rounded up (see ceilMicro); an inclusive end_time is cut
	// down by the stores themselves.
	q.From = ceilMicro(q.From)
	if !endInclusive {
		q.To = ceilMicro(q.To)
	}
	switch p.Order {
	case "", "desc":
	case "asc":
		q.Ascending = true
	default:
		return q, invalidParam("query.order", p.Order, "order must be asc or desc")
	}
	q.scope = cursorScope(series, q)
	if p.Cursor == "" {
		return q, nil
	}
	if p.Offset != 0 {
		return q, invalidParam("query.cursor", p.Cursor, "cursor and offset cannot be combined: a cursor already says where the page starts")
	}
	after, key, ok := decodeCursor(p.Cursor, q.scope)
	if !ok {
		return q, invalidParam("query.cursor", p.Cursor,
			"cursor is not a next_cursor of this series and query: pass it back with the same path, start_time, end_time and order")
	}
	q.After, q.AfterKey = &after, key
	return q, nil
}

// ceilMicro returns t rounded up to the microsecond, the stores'
// precision (nil for nil). For a stored time s, s ≥ t and s < t hold
// exactly when s ≥ ceilMicro(t) and s < ceilMicro(t), where the stores,
// which cut a bound down to the microsecond, would keep a snapshot a
// nanosecond before a start_time and leave out one a nanosecond before an
// end_time. (s > t and s ≤ t hold as the cut bound says.)
func ceilMicro(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := t.Truncate(time.Microsecond)
	if c.Before(*t) {
		c = c.Add(time.Microsecond)
	}
	return &c
}

// cursorScope binds a cursor to the series and the query's range and order.
func cursorScope(series string, q seriesQuery) []byte {
	b := append([]byte(series), 0)
	for _, t := range []*time.Time{q.From, q.To} {
		if t != nil {
			b = strconv.AppendInt(b, t.UnixMicro(), 10)
		}
		b = append(b, 0)
	}
	b = strconv.AppendBool(b, q.Ascending)
	sum := sha256.Sum256(b)
	return sum[:8]
}

// cursor returns the next_cursor of a page whose last element is at last.
func (q seriesQuery) cursor(last time.Time) *string { return q.cursorAt(last, nil) }

// cursorAt returns the next_cursor of a page whose last element is at last
// with key (the rest of its position, for series whose elements can share
// an instant): URL-safe base64 of the version, the time in Unix
// microseconds, the scope and the key.
func (q seriesQuery) cursorAt(last time.Time, key []byte) *string {
	b := make([]byte, 0, 1+8+len(q.scope)+len(key))
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(last.UnixMicro()))
	b = append(b, q.scope...)
	b = append(b, key...)
	s := base64.RawURLEncoding.EncodeToString(b)
	return &s
}

// decodeCursor returns the position a cursor holds (its time and the key
// after it) if it was made for scope and its time is one a page can start
// after (between the epoch and maxCursorMicros). The key is the caller's
// to check (decodeTradeKey).
func decodeCursor(c string, scope []byte) (time.Time, []byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	n := 1 + 8 + len(scope)
	if err != nil || len(b) < n || b[0] != cursorVersion || string(b[9:n]) != string(scope) {
		return time.Time{}, nil, false
	}
	us := int64(binary.BigEndian.Uint64(b[1:9]))
	if us < 0 || us > maxCursorMicros {
		return time.Time{}, nil, false
	}
	return time.UnixMicro(us).UTC(), b[n:], true
}

// page cuts a page read with one element more when the query continues a
// cursor (see readLimit) to limit, and reports whether another page
// follows: by that extra element, or else by the matched count.
func page[T any](q seriesQuery, items []T, limit, offset, matched int) ([]T, bool) {
	if q.After == nil {
		return items, offset+len(items) < matched
	}
	return items[:min(len(items), limit)], len(items) > limit
}

// readLimit is how many elements to read for a page of limit: one more
// when the query continues a cursor, which tells whether another follows.
func (q seriesQuery) readLimit(limit int) int {
	if q.After != nil {
		return limit + 1
	}
	return limit
}

// cacheKey is the query's part of a page cache key.
func (q seriesQuery) cacheKey() string {
	if q.After == nil {
		return base64.RawURLEncoding.EncodeToString(q.scope)
	}
	return base64.RawURLEncoding.EncodeToString(q.scope) + "@" + strconv.FormatInt(q.After.UnixMicro(), 10)
}

// ranged reports whether the query narrows the series by time.
func (q seriesQuery) ranged() bool { return q.From != nil || q.To != nil }
