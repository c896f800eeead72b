package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
)

// DataVersion is what a market's data is beside its record: its
// SeriesCount (the number of its snapshots, and of those drops took), the
// number of its trades, and its gaps. A replay's result is kept for reuse
// under its market's UpdatedAt and this (the job's version), as UpdatedAt
// alone does not change when data is appended: every write of data
// changes it, and none costs the appends anything.
//
//   - Snapshots and trades are only ever added (a write that adds nothing
//     changes nothing), so their counts grow with every write that stores
//     one: by the collector, a backfill, an archive import, a transfer.
//   - Dropping old months (postgres's DropSnapshotsBefore) lowers the
//     count of the markets it takes snapshots from, and raises their
//     Dropped by as much: as many snapshots appended after it leave N as
//     it was before, never both (SeriesCount).
//   - Gaps are merged and cut, so they are taken whole.
type DataVersion struct {
	SeriesCount
	Trades int
	Gaps   []Gap
}

// String is the version as a job's id takes it: equal for equal data
// versions, whatever order the gaps were read in.
func (v DataVersion) String() string {
	gaps := slices.SortedFunc(slices.Values(v.Gaps), func(a, b Gap) int {
		return cmp.Or(a.From.Compare(b.From), a.To.Compare(b.To), cmp.Compare(a.Kind, b.Kind))
	})
	h := sha256.New()
	var b [8]byte
	for _, g := range gaps {
		binary.BigEndian.PutUint64(b[:], uint64(g.From.UnixMicro()))
		h.Write(b[:])
		binary.BigEndian.PutUint64(b[:], uint64(g.To.UnixMicro()))
		h.Write(b[:])
		h.Write([]byte(g.Kind))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%d/%d/%d/%d/%s", v.N, v.Dropped, v.Trades, len(gaps), hex.EncodeToString(h.Sum(nil)[:8]))
}

// DataVersioner is a store that reads the data versions of many markets
// in one round trip. Use DataVersions, which asks a store without it
// market by market.
type DataVersioner interface {
	DataVersions(ctx context.Context, slugs []string) ([]DataVersion, error)
}

// GetMarketVersion returns the market with the slug and its DataVersion,
// or ErrNotFound: GetMarket and DataVersions asked side by side, so that a
// caller who needs both reads the market's counts once.
func GetMarketVersion(ctx context.Context, st Store, slug string) (Market, DataVersion, error) {
	return withMarket(ctx, st, slug, func() (DataVersion, error) {
		dvs, err := DataVersions(ctx, st, []string{slug})
		if err != nil {
			return DataVersion{}, err
		}
		return dvs[0], nil
	})
}

// DataVersions returns the data versions of the markets with the slugs, in
// their order; a slug of no market is ErrNotFound.
func DataVersions(ctx context.Context, st Store, slugs []string) ([]DataVersion, error) {
	if dv, ok := st.(DataVersioner); ok {
		return dv.DataVersions(ctx, slugs)
	}
	out := make([]DataVersion, len(slugs))
	for i, slug := range slugs {
		var err error
		if out[i].SeriesCount, err = CountSeries(ctx, st, slug); err != nil {
			return nil, err
		}
		if out[i].Trades, err = st.CountMarketTrades(ctx, slug, MarketTradeQuery{}); err != nil {
			return nil, err
		}
		if out[i].Gaps, err = st.ListGaps(ctx, slug); err != nil {
			return nil, err
		}
	}
	return out, nil
}
