package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/updown/updown/store"
)

// FeeStore is the part of a store FillFees reads and writes.
type FeeStore interface {
	store.MarketEditor
	ListMarkets(ctx context.Context, f store.MarketFilter) ([]store.Market, int, error)
}

// FillFeesConfig configures FillFees. Zero fields take the defaults noted.
type FillFeesConfig struct {
	// Gamma is Gamma's base URL (DefaultGammaURL).
	Gamma      string
	HTTPClient *http.Client // a default client when nil
	Store      FeeStore
	// Scheme finds the upstream slug of a market stored with neither an
	// upstream slug nor a Gamma id (NewPolymarketScheme()).
	Scheme SlugScheme
	Logger *slog.Logger
	// RequestTimeout bounds one request (5 s); Backoff paces the few
	// retries of each (200 ms doubling to 10 s).
	RequestTimeout time.Duration
	Backoff        Backoff

	// Slugs selects these markets; without any, every market Filter
	// matches (its Limit and Offset are ignored).
	Slugs  []string
	Filter store.MarketFilter
	// Overwrite writes Gamma's fee fields over the stored ones; without
	// it only fields the market has none of are filled, and a market
	// whose stored fields differ from Gamma's is left as it is.
	Overwrite bool
	// DryRun writes nothing: the result counts what would be written.
	DryRun bool
	// Page is how many markets one read of the selection takes (500).
	Page int
	// Progress, when set, is told after each market looked up how many
	// of how many have been.
	Progress func(done, total int)
}

// FeeNote is a market FillFees left as it was, and why.
type FeeNote struct {
	Slug string
	Why  string
}

// FillFeesResult counts what FillFees did.
type FillFeesResult struct {
	// Selected is how many stored markets the selection matched;
	// Lacking how many of them lacked a fee field (fee_type,
	// taker_fee_rate or fee_exponent) and were looked up on Gamma (every
	// one with Overwrite).
	Selected, Lacking int
	// Updated is how many markets were written (would be, under DryRun).
	Updated int
	// Current is how many had every fee field Gamma gives already.
	Current int
	// NoFees lists the markets Gamma has without any fee field (fees
	// off), NotFound those Gamma has no market of, Differ those a stored
	// field of which differs from Gamma's (kept without Overwrite), and
	// NotStored the slugs given that are not stored.
	NoFees, NotFound, Differ []FeeNote
	NotStored                []string
}

// FillFees fills the fee fields (fee_type, taker_fee_rate, fee_exponent,
// maker_rebate_rate) of stored markets from Gamma: markets recorded or
// imported by builds that kept no fee type, or from files that carry none.
// A market is looked up by its upstream slug, else its Gamma id, else the
// upstream slugs of its series and window; a market Gamma answers with
// another condition id is not it. Each market is written on its own
// (store.EditMarket), so a run stopped part way keeps what it wrote, and a
// run again asks Gamma only of the markets still lacking. A failed lookup
// (Gamma unreachable, or answering errors after its retries) stops the
// run: the error says how far it got, and the result counts what was
// done before it.
func FillFees(ctx context.Context, cfg FillFeesConfig) (FillFeesResult, error) {
	var res FillFeesResult
	if cfg.Store == nil {
		return res, errors.New("collect: fill fees needs a store")
	}
	if cfg.Scheme == nil {
		cfg.Scheme = NewPolymarketScheme()
	}
	if cfg.Page <= 0 {
		cfg.Page = 500
	}
	g, err := oneOffGamma(cfg.Gamma, cfg.HTTPClient, cfg.Logger, cfg.RequestTimeout, cfg.Backoff)
	if err != nil {
		return res, err
	}
	cfg.Logger = g.u.log

	todo, err := feeSelection(ctx, cfg, &res)
	if err != nil {
		return res, err
	}
	res.Lacking = len(todo)
	for i, slug := range todo {
		if i > 0 && cfg.Progress != nil {
			cfg.Progress(i, len(todo))
		}
		m, err := cfg.Store.GetMarket(ctx, slug)
		if err != nil {
			// Deleted meanwhile, or the store failing: either way not
			// to be skipped in silence.
			return res, fmt.Errorf("collect: fill fees: read market %s: %w; %d markets were updated before it", slug, err, res.Updated)
		}
		f, found, err := findStored(ctx, g, cfg.Scheme, m)
		if ctx.Err() != nil {
			return res, fmt.Errorf("collect: fill fees stopped at market %s: %w; %d of the %d markets looked up were updated before it", m.Slug, ctx.Err(), res.Updated, res.Lacking)
		}
		if err != nil {
			again := "run again to go on: the markets filled are not looked up again"
			if cfg.Overwrite {
				again = "run again to go on"
			}
			return res, fmt.Errorf("collect: Gamma (%s) did not answer for market %s: %w; %d of the %d markets looked up were updated before it (%s)",
				g.u.base, m.Slug, err, res.Updated, res.Lacking, again)
		}
		if !found {
			res.NotFound = append(res.NotFound, FeeNote{m.Slug, notFoundWhy(m)})
			continue
		}
		var want store.Market
		applyFees(&want, f.market)
		if want.FeeType == "" && want.TakerFeeRate == nil && want.FeeExponent == nil && want.MakerRebateRate == nil {
			res.NoFees = append(res.NoFees, FeeNote{m.Slug, "Gamma gives the market no fee type or schedule (fees off)"})
			continue
		}
		// The edit is worked out again on the market as stored at the
		// write: a field filled meanwhile is not written over.
		var outcome, why string
		edit := func(cur *store.Market) bool {
			outcome, why = fillFees(cur, f.market, want, cfg.Overwrite)
			return outcome == "updated"
		}
		if cfg.DryRun {
			cur := m
			edit(&cur)
		} else if _, _, err := store.EditMarket(ctx, cfg.Store, m.Slug, edit); err != nil {
			return res, fmt.Errorf("collect: fill fees: %w; %d markets were updated before it", err, res.Updated)
		}
		switch outcome {
		case "updated":
			res.Updated++
			cfg.Logger.InfoContext(ctx, "fee fields filled from Gamma", "market", m.Slug, "fee_type", f.market.FeeType, "dry_run", cfg.DryRun)
		case "differ":
			res.Differ = append(res.Differ, FeeNote{m.Slug, why})
		default:
			res.Current++
		}
	}
	if len(todo) > 0 && cfg.Progress != nil {
		cfg.Progress(len(todo), len(todo))
	}
	return res, nil
}

// feeSelection reads the selected markets and returns the slugs of those
// to look up on Gamma: every one under Overwrite, else those lacking a fee
// field. Only slugs are kept: a year of every series is some 450,000 markets.
func feeSelection(ctx context.Context, cfg FillFeesConfig, res *FillFeesResult) ([]string, error) {
	var todo []string
	take := func(m store.Market) {
		res.Selected++
		if cfg.Overwrite || lacksFees(m) {
			todo = append(todo, m.Slug)
		}
	}
	if len(cfg.Slugs) > 0 {
		seen := map[string]bool{}
		for _, slug := range cfg.Slugs {
			if seen[slug] {
				continue
			}
			seen[slug] = true
			m, err := cfg.Store.GetMarket(ctx, slug)
			if errors.Is(err, store.ErrNotFound) {
				res.NotStored = append(res.NotStored, slug)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("collect: fill fees: read market %s: %w", slug, err)
			}
			take(m)
		}
		return todo, nil
	}
	// Paged newest first by start time: each page starts at the last
	// market's start, past the markets read there (the first in the
	// listing's order there), so that no page costs the offset of the
	// ones before, and a market stored meanwhile neither repeats one
	// (those read are skipped) nor hides one.
	f := cfg.Filter
	f.Window, f.Limit, f.Offset = nil, cfg.Page, 0
	var last time.Time          // start_time of the last market read
	atLast := map[string]bool{} // the markets read that start at last
	skip := 0                   // a page's worth of markets read already, stored meanwhile
	for {
		f.Offset = len(atLast) + skip
		page, _, err := cfg.Store.ListMarkets(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("collect: fill fees: list markets: %w", err)
		}
		fresh := false
		for _, m := range page {
			if m.StartTime.Equal(last) && atLast[m.Slug] {
				continue
			}
			fresh = true
			take(m)
			if !m.StartTime.Equal(last) {
				last, atLast = m.StartTime, map[string]bool{}
			}
			atLast[m.Slug] = true
		}
		if len(page) < cfg.Page {
			return todo, nil
		}
		if !fresh {
			skip += len(page)
			continue
		}
		// StartBefore is strict: up to the instant after last (stores
		// keep microseconds).
		before := last.Add(time.Microsecond)
		f.StartBefore, skip = &before, 0
	}
}

// lacksFees reports whether a market lacks a fee field a lookup could
// fill: its fee type, rate or exponent (a market recorded with its fee type
// was recorded with the rest of what Gamma gave).
func lacksFees(m store.Market) bool {
	return m.FeeType == "" || m.TakerFeeRate == nil || m.FeeExponent == nil
}

// fillFees applies Gamma's fee fields (want, from g) to m and says what it
// did: "updated", "current" (nothing to change) or "differ" (a stored
// field differs from Gamma's and, without overwrite, m is left as it is;
// why names the fields). Without overwrite, a field is filled only where m
// has none, and only when the fields m has agree with Gamma's: a fee type
// beside another schedule's rate would charge a curve neither names.
func fillFees(m *store.Market, g gammaMarket, want store.Market, overwrite bool) (outcome, why string) {
	before := *m
	if overwrite {
		applyFees(m, g)
		if sameFees(before, *m) {
			return "current", ""
		}
		return "updated", ""
	}
	var differ []string
	if m.FeeType != "" && want.FeeType != "" && m.FeeType != want.FeeType {
		differ = append(differ, fmt.Sprintf("fee_type %s, Gamma's %s", m.FeeType, want.FeeType))
	}
	for _, f := range []struct {
		name       string
		have, gave *float64
	}{
		{"taker_fee_rate", m.TakerFeeRate, want.TakerFeeRate},
		{"maker_rebate_rate", m.MakerRebateRate, want.MakerRebateRate},
	} {
		if f.have != nil && f.gave != nil && *f.have != *f.gave {
			differ = append(differ, fmt.Sprintf("%s %s, Gamma's %s", f.name, fmtFloat(*f.have), fmtFloat(*f.gave)))
		}
	}
	if m.FeeExponent != nil && want.FeeExponent != nil && *m.FeeExponent != *want.FeeExponent {
		differ = append(differ, fmt.Sprintf("fee_exponent %d, Gamma's %d", *m.FeeExponent, *want.FeeExponent))
	}
	if len(differ) > 0 {
		return "differ", strings.Join(differ, "; ") + " (kept; --overwrite takes Gamma's)"
	}
	if m.FeeType == "" {
		m.FeeType = want.FeeType
	}
	if m.TakerFeeRate == nil {
		m.TakerFeeRate = want.TakerFeeRate
	}
	if m.FeeExponent == nil {
		m.FeeExponent = want.FeeExponent
	}
	if m.MakerRebateRate == nil {
		m.MakerRebateRate = want.MakerRebateRate
	}
	if sameFees(before, *m) {
		return "current", ""
	}
	return "updated", ""
}

// sameFees reports whether a and b have the same fee fields.
func sameFees(a, b store.Market) bool {
	eqF := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqI := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.FeeType == b.FeeType && eqF(a.TakerFeeRate, b.TakerFeeRate) && eqI(a.FeeExponent, b.FeeExponent) &&
		eqF(a.MakerRebateRate, b.MakerRebateRate)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// findStored finds a stored market on Gamma: by its upstream slug, else
// its Gamma id, else the upstream slugs of its series' window (a market
// stored with neither). found is false when Gamma has none, or only a
// market of another condition id.
func findStored(ctx context.Context, g *gamma, scheme SlugScheme, m store.Market) (gammaFound, bool, error) {
	var f gammaFound
	var found bool
	var err error
	switch {
	case m.UpstreamSlug != "":
		f, found, err = g.bySlug(ctx, m.UpstreamSlug)
	case m.MarketID != "":
		f, found, err = g.byID(ctx, m.MarketID)
	case m.Coin.Valid() && m.MarketType.AvailableFor(m.Coin):
		for _, slug := range scheme.Slugs(m.Coin, m.MarketType, m.StartTime) {
			if f, found, err = g.bySlug(ctx, slug); err != nil || found {
				break
			}
		}
	}
	if err != nil || !found {
		return gammaFound{}, false, err
	}
	if m.ConditionID != "" && f.market.ConditionID != "" && !strings.EqualFold(m.ConditionID, f.market.ConditionID) {
		return gammaFound{}, false, nil
	}
	return f, true, nil
}

// notFoundWhy says how a market Gamma has none of was looked for.
func notFoundWhy(m store.Market) string {
	var why string
	switch {
	case m.UpstreamSlug != "":
		why = "Gamma has no market " + m.UpstreamSlug
	case m.MarketID != "":
		why = "Gamma has no market of id " + m.MarketID
	default:
		why = "Gamma has no market at its series' slugs for " + m.StartTime.UTC().Format(time.RFC3339)
	}
	if m.ConditionID != "" {
		why += " of condition id " + m.ConditionID
	}
	return why
}
