package memory

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/updown/updown/store"
)

// depthKey names one depth series.
type depthKey struct {
	symbol string
	kind   store.ExchangeKind
}

// A depth snapshot is packed as
//
//	uvarint len(Bids), uvarint len(Asks)
//	varint LastUpdateID, num CoinPrice
//	Price and Quantity of each bid, then of each ask

// AppendDepth stores the depth snapshots whose (Symbol, Kind, Time) is not
// stored yet; of two in one call with the same key, the first is kept. An
// empty symbol or an unknown kind is ErrInvalid and stores nothing.
func (s *Store) AppendDepth(ctx context.Context, snaps []store.DepthSnapshot) error {
	if err := live(ctx, "append depth"); err != nil {
		return err
	}
	bySeries := map[depthKey][]entry{}
	for i, d := range snaps {
		if d.Symbol == "" || !d.Kind.Valid() {
			return fmt.Errorf("memory: append depth: snapshot %d of %d has symbol %q, kind %q: %w",
				i+1, len(snaps), d.Symbol, d.Kind, store.ErrInvalid)
		}
		k := depthKey{d.Symbol, d.Kind}
		bySeries[k] = append(bySeries[k], entry{d.Time.UnixMicro(), appendDepth(nil, d)})
	}
	for k, entries := range bySeries {
		s.depthSeries(k).insert(sortUnique(entries))
	}
	return nil
}

// depthSeries returns the series for k, made on first use.
func (s *Store) depthSeries(k depthKey) *timeline {
	s.depthMu.RLock()
	tl, ok := s.depth[k]
	s.depthMu.RUnlock()
	if ok {
		return tl
	}
	s.depthMu.Lock()
	defer s.depthMu.Unlock()
	if tl, ok = s.depth[k]; !ok {
		tl = &timeline{}
		s.depth[k] = tl
	}
	return tl
}

// ListDepth returns a page of one symbol and kind's depth snapshots, newest
// first, and how many match f.
func (s *Store) ListDepth(ctx context.Context, f store.DepthFilter) ([]store.DepthSnapshot, int, error) {
	if err := live(ctx, "list depth"); err != nil {
		return nil, 0, err
	}
	if err := checkPage(f.Limit, f.Offset); err != nil {
		return nil, 0, fmt.Errorf("memory: list depth: %w", err)
	}
	s.depthMu.RLock()
	tl, ok := s.depth[depthKey{f.Symbol, f.Kind}]
	s.depthMu.RUnlock()
	if !ok {
		return []store.DepthSnapshot{}, 0, nil
	}
	from, to := depthRange(f)
	total := tl.count(from, to)
	if f.After != nil {
		if a := f.After.UnixMicro(); f.Ascending {
			from = max(from, a+1)
		} else {
			to = min(to, a-1)
		}
	}
	entries, _ := tl.page(from, to, f.Offset, f.Limit, f.Ascending)
	out, err := unpackDepths(entries)
	if err != nil {
		return nil, 0, fmt.Errorf("memory: list depth of %s %s: %w", f.Symbol, f.Kind, err)
	}
	for i := range out {
		out[i].Symbol, out[i].Kind = f.Symbol, f.Kind
	}
	return out, total, nil
}

// depthRange returns f's time bounds in Unix microseconds, inclusive.
func depthRange(f store.DepthFilter) (from, to int64) {
	from, to = minMicros, maxMicros
	if f.From != nil {
		from = f.From.UnixMicro()
	}
	if !f.MinTime.IsZero() {
		from = max(from, f.MinTime.UnixMicro())
	}
	if f.To != nil {
		to = f.To.UnixMicro()
	}
	return from, to
}

func appendDepth(dst []byte, d store.DepthSnapshot) []byte {
	dst = appendCounts(dst, len(d.Bids), len(d.Asks))
	dst = binary.AppendVarint(dst, d.LastUpdateID)
	dst = appendNum(dst, d.CoinPrice)
	for _, side := range [][]store.DepthLevel{d.Bids, d.Asks} {
		for _, l := range side {
			dst = appendNum(dst, l.Price)
			dst = appendNum(dst, l.Quantity)
		}
	}
	return dst
}

// unpackDepths decodes a page; its levels share one allocation, each side
// capped so that appending to it cannot overwrite its neighbour.
func unpackDepths(entries []entry) ([]store.DepthSnapshot, error) {
	levels := 0
	for _, e := range entries {
		r := reader{b: e.data}
		levels += r.count() + r.count()
		if r.err != nil {
			return nil, r.err
		}
	}
	pool := make([]store.DepthLevel, levels)
	out := make([]store.DepthSnapshot, len(entries))
	for i, e := range entries {
		r := reader{b: e.data}
		bids, asks := r.count(), r.count()
		d := &out[i]
		d.Time = time.UnixMicro(e.micros).UTC()
		d.LastUpdateID = r.varint()
		d.CoinPrice = r.num()
		d.Bids, d.Asks = pool[:bids:bids], pool[bids:bids+asks:bids+asks]
		pool = pool[bids+asks:]
		for _, side := range [][]store.DepthLevel{d.Bids, d.Asks} {
			for j := range side {
				side[j].Price = r.num()
				side[j].Quantity = r.num()
			}
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, nil
}
