package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// t0 is the suite's reference instant, 2025-06-01T12:00:00Z.
func t0() time.Time { return time.Unix(1748779200, 0).UTC() }

// elsewhere is the zone the suite writes times in, so that a store that
// does not convert to UTC on read is caught.
func elsewhere() *time.Location { return time.FixedZone("UTC+05:30", 5*3600+30*60) }

// clockTolerance is how far a store's clock (a database server's, say) may
// be from the test's when the suite checks timestamps the store assigned.
const clockTolerance = time.Minute

// tick waits long enough for a store's microsecond clock to move on, so
// that a timestamp assigned after it is strictly later than one before it.
func tick() { time.Sleep(2 * time.Millisecond) }

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// micros returns x millionths, the exact float64 nearest to it, so values
// survive a store that packs numbers to six decimals.
func micros(x int64) float64 { return float64(x) / 1e6 }

// mustOK fails the test now if err is not nil.
func mustOK(t testing.TB, err error, op string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", op, err)
	}
}

// errOf is the error of a write that also counts what it stored (an
// append), for checks that look at the error only.
func errOf(_ int, err error) error { return err }

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t testing.TB, err, target error, op string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error = %v, want one matching %v", op, err, target)
	}
}

// checkRecent fails the test unless got is a store-assigned timestamp taken
// between before and after (give or take clockTolerance), in UTC.
func checkRecent(t testing.TB, field string, got, before, after time.Time) {
	t.Helper()
	if got.IsZero() {
		t.Errorf("%s is zero, want it set by the store", field)
		return
	}
	if got.Before(before.Add(-clockTolerance)) || got.After(after.Add(clockTolerance)) {
		t.Errorf("%s = %v, want a time between %v and %v", field, got, before, after)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", field, got.Location())
	}
	if !got.Equal(got.Truncate(time.Microsecond)) {
		t.Errorf("%s = %v has sub-microsecond digits", field, got)
	}
}

// diff collects the differences between a wanted and a got value, one line
// per field.
type diff []string

func (d *diff) add(field string, want, got any) {
	*d = append(*d, fmt.Sprintf("  %s: got %v, want %v", field, got, want))
}

// check fails the test with every difference in d.
func (d diff) check(t testing.TB, what string) {
	t.Helper()
	if len(d) > 0 {
		t.Errorf("%s differs:\n%s", what, strings.Join(d, "\n"))
	}
}

func eq[T comparable](d *diff, field string, want, got T) {
	if want != got {
		d.add(field, want, got)
	}
}

// eqTime compares got with what was written: the same instant after
// truncation to the microsecond, in UTC.
func eqTime(d *diff, field string, want, got time.Time) {
	if !got.Equal(want.Truncate(time.Microsecond)) {
		d.add(field, want.Truncate(time.Microsecond).UTC(), got)
	}
	if got.Location() != time.UTC {
		d.add(field+" location", time.UTC, got.Location())
	}
}

// eqStamp compares a store-assigned timestamp: when want is zero the store
// must have set one, otherwise it must be want.
func eqStamp(d *diff, field string, want, got time.Time) {
	if want.IsZero() {
		if got.IsZero() {
			d.add(field, "a time set by the store", got)
		}
		return
	}
	eqTime(d, field, want, got)
}

// eqOpt compares optional values: both nil, or both set and alike by
// same.
func eqOpt[T any](d *diff, field string, want, got *T, same func(d *diff, field string, want, got T)) {
	switch {
	case want == nil && got == nil:
	case want == nil:
		d.add(field, "nil", *got)
	case got == nil:
		d.add(field, *want, "nil")
	default:
		same(d, field, *want, *got)
	}
}

func eqPtr[T comparable](d *diff, field string, want, got *T) { eqOpt(d, field, want, got, eq[T]) }

func eqTimePtr(d *diff, field string, want, got *time.Time) { eqOpt(d, field, want, got, eqTime) }

// eqSlice compares element by element; nil and empty are the same.
func eqSlice[T comparable](d *diff, field string, want, got []T) {
	if !slices.Equal(want, got) {
		d.add(field, want, got)
	}
}

func marketDiff(want, got store.Market) diff {
	var d diff
	eq(&d, "Slug", want.Slug, got.Slug)
	eq(&d, "MarketID", want.MarketID, got.MarketID)
	eq(&d, "EventID", want.EventID, got.EventID)
	eq(&d, "Coin", want.Coin, got.Coin)
	eq(&d, "MarketType", want.MarketType, got.MarketType)
	eqTime(&d, "StartTime", want.StartTime, got.StartTime)
	eqTime(&d, "EndTime", want.EndTime, got.EndTime)
	eqPtr(&d, "CoinPriceStart", want.CoinPriceStart, got.CoinPriceStart)
	eqPtr(&d, "CoinPriceEnd", want.CoinPriceEnd, got.CoinPriceEnd)
	eq(&d, "ConditionID", want.ConditionID, got.ConditionID)
	eq(&d, "ClobTokenUp", want.ClobTokenUp, got.ClobTokenUp)
	eq(&d, "ClobTokenDown", want.ClobTokenDown, got.ClobTokenDown)
	eqPtr(&d, "Winner", want.Winner, got.Winner)
	eqPtr(&d, "FinalVolume", want.FinalVolume, got.FinalVolume)
	eqPtr(&d, "FinalLiquidity", want.FinalLiquidity, got.FinalLiquidity)
	eqTimePtr(&d, "ResolvedAt", want.ResolvedAt, got.ResolvedAt)
	eqStamp(&d, "CreatedAt", want.CreatedAt, got.CreatedAt)
	eqStamp(&d, "UpdatedAt", want.UpdatedAt, got.UpdatedAt)
	eq(&d, "UpstreamSlug", want.UpstreamSlug, got.UpstreamSlug)
	eqPtr(&d, "TakerFeeRate", want.TakerFeeRate, got.TakerFeeRate)
	eqPtr(&d, "FeeExponent", want.FeeExponent, got.FeeExponent)
	eq(&d, "FeeType", want.FeeType, got.FeeType)
	eqPtr(&d, "MakerRebateRate", want.MakerRebateRate, got.MakerRebateRate)
	eqPtr(&d, "TickSize", want.TickSize, got.TickSize)
	if len(want.TickSizeChanges) != len(got.TickSizeChanges) {
		d.add("TickSizeChanges", want.TickSizeChanges, got.TickSizeChanges)
	} else {
		for i, w := range want.TickSizeChanges {
			eqTime(&d, fmt.Sprintf("TickSizeChanges[%d].Time", i), w.Time, got.TickSizeChanges[i].Time)
			eq(&d, fmt.Sprintf("TickSizeChanges[%d].TickSize", i), w.TickSize, got.TickSizeChanges[i].TickSize)
		}
	}
	eqPtr(&d, "MinOrderSize", want.MinOrderSize, got.MinOrderSize)
	eq(&d, "ResolutionSource", want.ResolutionSource, got.ResolutionSource)
	eqPtr(&d, "PriceToBeat", want.PriceToBeat, got.PriceToBeat)
	eqPtr(&d, "FinalPrice", want.FinalPrice, got.FinalPrice)
	return d
}

// checkMarket fails the test unless got is want as a store returns it.
// Zero CreatedAt/UpdatedAt in want only require the store to have set them.
func checkMarket(t testing.TB, op string, want, got store.Market) {
	t.Helper()
	marketDiff(want, got).check(t, fmt.Sprintf("%s: market %q", op, want.Slug))
}

func bookDiff(d *diff, field string, want, got *store.Book) {
	eqOpt(d, field, want, got, func(d *diff, field string, want, got store.Book) {
		eqSlice(d, field+".Bids", want.Bids, got.Bids)
		eqSlice(d, field+".Asks", want.Asks, got.Asks)
	})
}

// snapshotDiff compares a snapshot read back with the one written; without
// books the read must have nil books.
func snapshotDiff(want, got store.Snapshot, withBooks bool) diff {
	var d diff
	eqTime(&d, "Time", want.Time, got.Time)
	eq(&d, "CoinPrice", want.CoinPrice, got.CoinPrice)
	eq(&d, "PriceUp", want.PriceUp, got.PriceUp)
	eq(&d, "PriceDown", want.PriceDown, got.PriceDown)
	if !withBooks {
		want.BookUp, want.BookDown = nil, nil
	}
	bookDiff(&d, "BookUp", want.BookUp, got.BookUp)
	bookDiff(&d, "BookDown", want.BookDown, got.BookDown)
	return d
}

// checkSnapshots fails the test unless got is want, element by element.
func checkSnapshots(t testing.TB, op string, want, got []store.Snapshot, withBooks bool) {
	t.Helper()
	checkEach(t, op, "snapshot", want, got, func(s store.Snapshot) time.Time { return s.Time },
		func(w, g store.Snapshot) diff { return snapshotDiff(w, g, withBooks) })
}

// checkEach fails the test unless got is want, element by element; a
// length mismatch lists both sides' times.
func checkEach[T any](t testing.TB, op, what string, want, got []T, at func(T) time.Time, differ func(want, got T) diff) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d %ss (%v), want %d (%v)", op, len(got), what, timesOf(got, at), len(want), timesOf(want, at))
		return
	}
	for i := range want {
		differ(want[i], got[i]).check(t, fmt.Sprintf("%s: %s %d", op, what, i))
	}
}

func timesOf[T any](xs []T, at func(T) time.Time) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = at(x).UTC().Format(time.RFC3339Nano)
	}
	return out
}

func depthTime(d store.DepthSnapshot) time.Time { return d.Time }

func depthDiff(want, got store.DepthSnapshot) diff {
	var d diff
	eq(&d, "Symbol", want.Symbol, got.Symbol)
	eq(&d, "Kind", want.Kind, got.Kind)
	eqTime(&d, "Time", want.Time, got.Time)
	eq(&d, "CoinPrice", want.CoinPrice, got.CoinPrice)
	eqSlice(&d, "Bids", want.Bids, got.Bids)
	eqSlice(&d, "Asks", want.Asks, got.Asks)
	eq(&d, "LastUpdateID", want.LastUpdateID, got.LastUpdateID)
	return d
}

// checkDepth fails the test unless got is want, element by element.
func checkDepth(t testing.TB, op string, want, got []store.DepthSnapshot) {
	t.Helper()
	checkEach(t, op, "depth snapshot", want, got, depthTime, depthDiff)
}

func customerDiff(want, got store.Customer) diff {
	var d diff
	eq(&d, "ID", want.ID, got.ID)
	eq(&d, "Email", want.Email, got.Email)
	eq(&d, "Name", want.Name, got.Name)
	eq(&d, "Tier", want.Tier, got.Tier)
	eq(&d, "Limits", want.Limits, got.Limits)
	eqStamp(&d, "CreatedAt", want.CreatedAt, got.CreatedAt)
	eqStamp(&d, "UpdatedAt", want.UpdatedAt, got.UpdatedAt)
	return d
}

func checkCustomer(t testing.TB, op string, want, got store.Customer) {
	t.Helper()
	customerDiff(want, got).check(t, fmt.Sprintf("%s: customer %q", op, want.Email))
}

func apiKeyDiff(want, got store.APIKey) diff {
	var d diff
	eq(&d, "ID", want.ID, got.ID)
	eq(&d, "CustomerID", want.CustomerID, got.CustomerID)
	eq(&d, "Prefix", want.Prefix, got.Prefix)
	eqSlice(&d, "Hash", want.Hash, got.Hash)
	eqStamp(&d, "CreatedAt", want.CreatedAt, got.CreatedAt)
	eqTimePtr(&d, "RevokedAt", want.RevokedAt, got.RevokedAt)
	return d
}

func checkAPIKey(t testing.TB, op string, want, got store.APIKey) {
	t.Helper()
	apiKeyDiff(want, got).check(t, fmt.Sprintf("%s: API key %q", op, want.Prefix))
}
