package api

import (
	"context"
	"math"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/store"
)

// Chart series (DESIGN 12): a whole market in one answer, downsampled per
// time bucket with each bucket's first, min and max kept, so a spike that
// lasts one snapshot still shows on a chart of a 24hr market.
const (
	seriesDefaultPoints = 2000
	seriesMinPoints     = 100
	seriesMaxPoints     = 5000
)

type seriesInput struct {
	Slug   string `path:"slug" doc:"Market slug." example:"btc-updown-24hr-1777420800"`
	Points int    `query:"points" default:"2000" minimum:"100" maximum:"5000" doc:"Most buckets to answer (100 to 5,000). A market with no more snapshots answers each one as its own bucket."`
}

// seriesBand is one value's buckets, aligned with seriesJSON.Time.
type seriesBand struct {
	First []float64 `json:"first" doc:"The bucket's first snapshot's value."`
	Min   []float64 `json:"min"`
	Max   []float64 `json:"max"`
}

type seriesJSON struct {
	Market    marketJSON `json:"market"`
	Points    int        `json:"points" doc:"The number of buckets asked for."`
	BucketMs  int64      `json:"bucket_ms" doc:"Each bucket's width in milliseconds; buckets tile the market from start_time to end_time. A market with no more snapshots than points has buckets narrow enough to hold one snapshot each."`
	Snapshots int        `json:"snapshots" doc:"Snapshots the buckets summarize (all the market has)."`
	Time      []int64    `json:"time" doc:"Epoch milliseconds of each non-empty bucket's first snapshot, ascending. Buckets without snapshots are left out."`
	Index     []int      `json:"index" doc:"Each bucket's first snapshot's position in time order (0: the oldest), so that /snapshots?limit=1&offset={snapshots-1-index} answers that very snapshot (with its books)."`
	PriceUp   seriesBand `json:"price_up"`
	PriceDown seriesBand `json:"price_down"`
	CoinPrice seriesBand `json:"coin_price"`
}

type seriesBody struct {
	Success   bool       `json:"success"`
	Data      seriesJSON `json:"data"`
	Timestamp string     `json:"timestamp" format:"date-time"`
}

type seriesOutput struct{ Body seriesBody }

func (s *Server) registerSeries() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-market-series",
		Method:      http.MethodGet,
		Path:        "/v1/markets/{slug}/series",
		Summary:     "A market's prices for a chart, downsampled",
		Description: "price_up, price_down and coin_price over the whole market in one answer, whatever its length: the market's span cut into " +
			"`points` equal buckets, each non-empty bucket giving its first, min and max value, so spikes survive. Same plan rules as the snapshots.",
		Tags:     []string{"Markets"},
		Security: []map[string][]string{{schemeAPIKey: {}}},
		Errors:   []int{400, 401, 403, 404, 429, 500, 503},
	}, s.series)
}

func (s *Server) series(ctx context.Context, in *seriesInput) (*seriesOutput, error) {
	m, err := s.findMarket(ctx, in.Slug, s.store.GetMarket, "market "+quoteID(in.Slug))
	if err != nil {
		return nil, err
	}
	points := in.Points
	if points == 0 {
		points = seriesDefaultPoints
	}
	// The counts alone (nothing decoded, one small read) key the cache:
	// see seriesCache. The store itself, not its gate of heavy reads, so
	// that it counts what a drop took too (store.SeriesCounter).
	sc, err := store.CountSeries(ctx, s.cfg.Store, m.Slug)
	if err != nil {
		return nil, s.storeFailure(ctx, "count snapshots", err)
	}
	total := sc.N
	out, err := s.seriesCache.load(ctx, seriesKey(m, points, sc), func(ctx context.Context) (seriesJSON, bool, error) {
		snaps, _, err := s.store.ListSnapshots(ctx, m.Slug, store.SnapshotQuery{Ascending: true})
		if err != nil {
			return seriesJSON{}, false, err
		}
		// Kept once resolved, and only when no snapshot arrived between
		// the count and the read.
		return downsample(m, snaps, points), m.Resolved() && len(snaps) == total, nil
	})
	if err != nil {
		return nil, s.storeFailure(ctx, "list snapshots", err)
	}
	return &seriesOutput{Body: seriesBody{Success: true, Data: out, Timestamp: formatTime(s.now())}}, nil
}

// downsample cuts the market's span into points buckets (snapshots ascending).
func downsample(m store.Market, snaps []store.Snapshot, points int) seriesJSON {
	start := m.StartTime.UnixMilli()
	span := m.EndTime.UnixMilli() - start
	if n := len(snaps); n > 0 { // recorded data past the end still counts
		if last := snaps[n-1].Time.UnixMilli() - start; last >= span {
			span = last + 1
		}
	}
	width := max(int64(math.Ceil(float64(span)/float64(points))), 1)
	if len(snaps) <= points {
		// Each snapshot its own bucket, as points' documentation says,
		// however unevenly the snapshots spread over the window: buckets no
		// wider than the closest two snapshots are apart put every one in
		// a bucket of its own, and only non-empty buckets are answered.
		width = min(width, closestApartMs(snaps))
	}
	out := seriesJSON{Market: toMarketJSON(m), Points: points, BucketMs: width, Snapshots: len(snaps)}
	n := min(len(snaps), points)
	out.Time, out.Index = make([]int64, 0, n), make([]int, 0, n)
	bands := []*seriesBand{&out.PriceUp, &out.PriceDown, &out.CoinPrice}
	for _, b := range bands {
		b.First, b.Min, b.Max = make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	}
	cur := int64(math.MinInt64)
	for i := range snaps {
		sn := &snaps[i]
		t := sn.Time.UnixMilli()
		bucket := max((t-start)/width, 0) // snapshots before start_time join the first bucket
		vals := [3]float64{sn.PriceUp, sn.PriceDown, sn.CoinPrice}
		if bucket != cur {
			cur = bucket
			out.Time, out.Index = append(out.Time, t), append(out.Index, i)
			for j, b := range bands {
				b.First, b.Min, b.Max = append(b.First, vals[j]), append(b.Min, vals[j]), append(b.Max, vals[j])
			}
			continue
		}
		k := len(out.Time) - 1
		for j, b := range bands {
			b.Min[k], b.Max[k] = min(b.Min[k], vals[j]), max(b.Max[k], vals[j])
		}
	}
	return out
}

// closestApartMs is the least distance in milliseconds between two
// consecutive snapshots (ascending) at different milliseconds, at least 1;
// math.MaxInt64 when there are no two such snapshots.
func closestApartMs(snaps []store.Snapshot) int64 {
	closest := int64(math.MaxInt64)
	for i := 1; i < len(snaps); i++ {
		if d := snaps[i].Time.UnixMilli() - snaps[i-1].Time.UnixMilli(); d > 0 {
			closest = min(closest, d)
		}
	}
	return closest
}
