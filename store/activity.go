package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Check reports why t cannot be stored (an error matching ErrInvalid), or
// nil: it needs a time, an outcome of OutcomeUp or OutcomeDown, a side of
// SideBuy or SideSell, and finite numbers.
func (t MarketTrade) Check() error {
	why := ""
	switch {
	case t.Time.IsZero():
		why = "no time"
	case t.Outcome != OutcomeUp && t.Outcome != OutcomeDown:
		why = fmt.Sprintf("outcome %q is not %s or %s", t.Outcome, OutcomeUp, OutcomeDown)
	case t.Side != SideBuy && t.Side != SideSell:
		why = fmt.Sprintf("side %q is not %s or %s", t.Side, SideBuy, SideSell)
	case t.FirstNonFinite().Field != "":
		why = fmt.Sprintf("price %v, size %v, fee rate %v bps: not all finite", t.Price, t.Size, t.FeeRateBps)
	default:
		return nil
	}
	return fmt.Errorf("trade at %s: %s: %w", t.Time.UTC().Format(time.RFC3339Nano), why, ErrInvalid)
}

// CompareMarketTrades orders trades oldest first, as MarketTradeQuery
// describes: by Time, then Outcome, Side, Price, Size, FeeRateBps and
// TxHash. It is 0 only for trades a store keeps once.
func CompareMarketTrades(a, b MarketTrade) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Outcome, b.Outcome); c != 0 {
		return c
	}
	if c := strings.Compare(a.Side, b.Side); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Price, b.Price); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Size, b.Size); c != 0 {
		return c
	}
	if c := cmp.Compare(a.FeeRateBps, b.FeeRateBps); c != 0 {
		return c
	}
	return strings.Compare(a.TxHash, b.TxHash)
}

// Check reports why g cannot be stored (an error matching ErrInvalid), or
// nil: To must be after From, and Kind one of the GapKinds.
func (g Gap) Check() error {
	if g.Kind != GapSnapshots && g.Kind != GapTrades {
		return fmt.Errorf("gap from %s: kind %q is not snapshots or trades: %w", g.From.UTC().Format(time.RFC3339Nano), g.Kind, ErrInvalid)
	}
	if g.To.After(g.From) {
		return nil
	}
	return fmt.Errorf("gap from %s to %s: does not end after it starts: %w",
		g.From.UTC().Format(time.RFC3339Nano), g.To.UTC().Format(time.RFC3339Nano), ErrInvalid)
}

// Name is the kind as the API and the database write it: "snapshots" or
// "trades".
func (k GapKind) Name() string {
	if k == GapSnapshots {
		return "snapshots"
	}
	return string(k)
}

// ParseGapKind reads a Name back; anything else is ErrInvalid.
func ParseGapKind(name string) (GapKind, error) {
	switch name {
	case "snapshots", "":
		return GapSnapshots, nil
	case string(GapTrades):
		return GapTrades, nil
	}
	return "", fmt.Errorf("gap kind %q is not snapshots or trades: %w", name, ErrInvalid)
}

// CompareGaps orders gaps as ListGaps lists them: by From, then Kind
// (snapshots first).
func CompareGaps(a, b Gap) int {
	if c := a.From.Compare(b.From); c != 0 {
		return c
	}
	return strings.Compare(string(a.Kind), string(b.Kind))
}

// MergeGaps returns the gaps in CompareGaps order, with gaps of one kind
// that overlap or touch (one's To equal to the next one's From) merged
// into one. It does not change its argument.
func MergeGaps(gaps []Gap) []Gap {
	if len(gaps) == 0 {
		return nil
	}
	sorted := slices.Clone(gaps)
	slices.SortFunc(sorted, CompareGaps)
	var out []Gap
	open := map[GapKind]int{} // kind → index in out of its last gap
	for _, g := range sorted {
		i, ok := open[g.Kind]
		if !ok || g.From.After(out[i].To) {
			open[g.Kind] = len(out)
			out = append(out, g)
			continue
		}
		if g.To.After(out[i].To) {
			out[i].To = g.To
		}
	}
	return out
}

// NewGaps returns what a store keeps once batch is recorded after stored,
// MergeGaps(stored + batch), and counts the gaps of batch that change it
// when they are recorded (merged, as a store keeps them), one at
// a time in batch order: a gap within one gap of its kind of stored and
// the gaps before it in batch, merged (MergeGaps), changes nothing
// (RecordGaps counts it as held); any other one adds or widens one. So a
// gap twice in batch counts once, and one within an earlier gap of batch
// (or within a stored gap and an earlier one that touch) not at all,
// while one within a later gap of batch counts as well as that gap.
//
// It keeps, per kind, the held gaps sorted and merged, and finds a gap's
// place by binary search: O(n log n) comparisons for n gaps, where merging
// everything again after each new gap was quadratic (4,000 gaps took
// seconds, under Postgres's lock on the market's row).
func NewGaps(stored, batch []Gap) (merged []Gap, added int) {
	held := map[GapKind][]Gap{} // per kind: sorted by From, disjoint, not touching
	for _, g := range MergeGaps(stored) {
		held[g.Kind] = append(held[g.Kind], g)
	}
	n := 0
	for _, g := range batch {
		list := held[g.Kind]
		// lo: the first held gap that ends no earlier than g starts,
		// the only one that can hold g; hi: the first after it that
		// starts after g ends. Those in between overlap or touch g.
		lo, _ := slices.BinarySearchFunc(list, g.From, func(h Gap, t time.Time) int { return h.To.Compare(t) })
		if lo < len(list) && !list[lo].From.After(g.From) && !g.To.After(list[lo].To) {
			continue
		}
		n++
		hi := lo
		for hi < len(list) && !list[hi].From.After(g.To) {
			hi++
		}
		joined := Gap{From: g.From, To: g.To, Kind: g.Kind}
		if lo < hi {
			if list[lo].From.Before(joined.From) {
				joined.From = list[lo].From
			}
			if list[hi-1].To.After(joined.To) {
				joined.To = list[hi-1].To
			}
		}
		held[g.Kind] = slices.Replace(list, lo, hi, joined)
	}
	// Each kind's list is merged and its gaps disjoint, so CompareGaps
	// (From, then kind) orders them all as MergeGaps would.
	for _, list := range held {
		merged = append(merged, list...)
	}
	slices.SortFunc(merged, CompareGaps)
	return merged, n
}

// SubtractGaps returns the gaps with the stretches of removed taken out,
// each removed gap cutting only gaps of its own kind: a gap inside a
// removed one goes, one that overlaps it keeps the part (or the two parts)
// outside. The result is in CompareGaps order, merged (MergeGaps); the
// arguments are not changed.
func SubtractGaps(gaps, removed []Gap) []Gap {
	out := MergeGaps(gaps)
	for _, r := range MergeGaps(removed) {
		var next []Gap
		for _, g := range out {
			if g.Kind != r.Kind || !g.From.Before(r.To) || !r.From.Before(g.To) {
				next = append(next, g)
				continue
			}
			if g.From.Before(r.From) {
				next = append(next, Gap{From: g.From, To: r.From, Kind: g.Kind})
			}
			if r.To.Before(g.To) {
				next = append(next, Gap{From: r.To, To: g.To, Kind: g.Kind})
			}
		}
		out = next
	}
	slices.SortFunc(out, CompareGaps)
	return out
}
