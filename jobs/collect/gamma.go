package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/updown/updown/store"
)

// gammaMarket is a market as Gamma's /markets and /events answer it. Only
// the fields the collector reads are declared.
type gammaMarket struct {
	ID             flexString `json:"id"`
	Slug           string     `json:"slug"`
	ConditionID    string     `json:"conditionId"`
	Outcomes       jsonList   `json:"outcomes"`
	ClobTokenIDs   jsonList   `json:"clobTokenIds"`
	OutcomePrices  jsonList   `json:"outcomePrices"`
	StartDate      string     `json:"startDate"`
	EventStartTime string     `json:"eventStartTime"`
	EndDate        string     `json:"endDate"`
	Closed         flexBool   `json:"closed"`
	ClosedTime     string     `json:"closedTime"`
	VolumeNum      flexFloat  `json:"volumeNum"`
	Volume         flexFloat  `json:"volume"`
	LiquidityNum   flexFloat  `json:"liquidityNum"`
	Liquidity      flexFloat  `json:"liquidity"`
	// UMAResolutionStatus is "resolved" once the outcome is final
	// ("proposed", "disputed" before; absent on some records).
	UMAResolutionStatus string `json:"umaResolutionStatus"`
	// OrderPriceMinTickSize is the tick (0.01 or 0.001), OrderMinSize the
	// smallest order in shares.
	OrderPriceMinTickSize flexFloat    `json:"orderPriceMinTickSize"`
	OrderMinSize          flexFloat    `json:"orderMinSize"`
	ResolutionSource      string       `json:"resolutionSource"`
	FeesEnabled           *flexBool    `json:"feesEnabled"`
	FeeType               string       `json:"feeType"`
	FeeSchedule           *feeSchedule `json:"feeSchedule"`
	// Events is set on /markets answers: the market's event, whose
	// eventMetadata may carry the reference prices.
	Events []gammaEvent `json:"events"`
}

// feeSchedule is a market's taker fee curve: fee = shares × rate ×
// (p(1−p))^exponent; makers get rebateRate of the fee their filled volume
// would have paid. Gamma writes numbers, the websocket's new_market
// strings.
type feeSchedule struct {
	Rate       flexFloat `json:"rate"`
	Exponent   flexFloat `json:"exponent"`
	TakerOnly  flexBool  `json:"takerOnly"`
	RebateRate flexFloat `json:"rebateRate"`
}

// gammaEvent is an event as /events answers it.
type gammaEvent struct {
	ID               flexString    `json:"id"`
	Slug             string        `json:"slug"`
	StartTime        string        `json:"startTime"`
	EndDate          string        `json:"endDate"`
	Closed           flexBool      `json:"closed"`
	ResolutionSource string        `json:"resolutionSource"`
	EventMetadata    eventMetadata `json:"eventMetadata"`
	Markets          []gammaMarket `json:"markets"`
}

// eventMetadata carries the official start and end reference prices of an
// up/down event (null until published). A value that is not a number is
// taken as not published rather than failing the lookup.
type eventMetadata struct {
	PriceToBeat looseFloat `json:"priceToBeat"`
	FinalPrice  looseFloat `json:"finalPrice"`
}

// looseFloat is a flexFloat that reads anything it cannot parse as unset.
type looseFloat struct{ flexFloat }

func (f *looseFloat) UnmarshalJSON(b []byte) error {
	if err := f.flexFloat.UnmarshalJSON(b); err != nil || (f.Set && f.V <= 0) {
		f.flexFloat = flexFloat{}
	}
	return nil
}

// UnmarshalJSON accepts eventMetadata as an object, null, or an object
// encoded in a string (Gamma's habit for nested JSON).
func (m *eventMetadata) UnmarshalJSON(b []byte) error {
	type plain eventMetadata
	var s string
	if json.Unmarshal(b, &s) == nil {
		b = []byte(s)
		if strings.TrimSpace(s) == "" {
			*m = eventMetadata{}
			return nil
		}
	}
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		*m = eventMetadata{} // a shape we do not know: not published
		return nil
	}
	*m = eventMetadata(v)
	return nil
}

// volume is the market's traded volume: volumeNum, else volume.
func (g gammaMarket) volume() *float64 {
	return firstSet(g.VolumeNum, g.Volume)
}

// liquidity is the market's liquidity: liquidityNum, else liquidity.
func (g gammaMarket) liquidity() *float64 {
	return firstSet(g.LiquidityNum, g.Liquidity)
}

func firstSet(fs ...flexFloat) *float64 {
	for _, f := range fs {
		if f.Set {
			v := f.V
			return &v
		}
	}
	return nil
}

// tokens pairs outcomes[i] with clobTokenIds[i] and returns the Up and
// Down tokens. Upstream order is not assumed.
func (g gammaMarket) tokens() (up, down string, err error) {
	if len(g.Outcomes) != 2 || len(g.ClobTokenIDs) != 2 {
		return "", "", fmt.Errorf("%w: market %s has %d outcomes and %d token ids, want 2 and 2",
			errMalformed, g.ID, len(g.Outcomes), len(g.ClobTokenIDs))
	}
	for i, o := range g.Outcomes {
		switch strings.ToLower(strings.TrimSpace(o)) {
		case "up":
			up = g.ClobTokenIDs[i]
		case "down":
			down = g.ClobTokenIDs[i]
		}
	}
	if up == "" || down == "" || up == down {
		return "", "", fmt.Errorf("%w: market %s has outcomes %q with tokens %q, want Up and Down",
			errMalformed, g.ID, []string(g.Outcomes), []string(g.ClobTokenIDs))
	}
	return up, down, nil
}

// outcome returns the winning outcome of a closed market: "Up" or "Down"
// for prices ["1","0"] or ["0","1"], "50-50" for ["0.5","0.5"] (a tie);
// "" while Gamma does not say: not closed, prices not settled, or a
// settlement not final (umaResolutionStatus "proposed" or "disputed":
// the prices show the outcome proposed, which a dispute may overturn).
func (g gammaMarket) outcome() string {
	if !bool(g.Closed) || len(g.OutcomePrices) != 2 || len(g.Outcomes) != 2 {
		return ""
	}
	if s := strings.ToLower(strings.TrimSpace(g.UMAResolutionStatus)); s != "" && s != "resolved" {
		return ""
	}
	win, halves := -1, 0
	for i, s := range g.OutcomePrices {
		p, err := parseNum(s)
		if err != nil {
			return ""
		}
		switch {
		case p >= 0.99:
			if win >= 0 {
				return ""
			}
			win = i
		case math.Abs(p-0.5) < 1e-9:
			halves++
		case p > 0.01:
			return "" // not settled
		}
	}
	if halves == 2 {
		return store.OutcomeFiftyFifty
	}
	if win < 0 {
		return ""
	}
	switch strings.ToLower(strings.TrimSpace(g.Outcomes[win])) {
	case "up":
		return store.OutcomeUp
	case "down":
		return store.OutcomeDown
	}
	return ""
}

// gamma is Polymarket's market metadata API.
type gamma struct {
	u       *upstream
	timeout time.Duration
	backoff Backoff
}

// lookupAttempts is how often a discovery or resolution request is sent
// before the caller hears of the failure (and retries on its own schedule).
const lookupAttempts = 4

func (g *gamma) get(ctx context.Context, path string, q url.Values, out any) error {
	return g.u.do(ctx, request{method: http.MethodGet, path: path, query: q,
		timeout: g.timeout, attempts: lookupAttempts, backoff: g.backoff}, out)
}

// gammaFound is a market Gamma answered with its event (the event's id
// and eventMetadata, where known).
type gammaFound struct {
	market gammaMarket
	event  gammaEvent
}

// bySlug looks a market up by its upstream slug: /events?slug= (which
// answers closed markets too, and carries eventMetadata), then
// /markets?slug= and, since /markets hides closed markets unless asked,
// /markets?slug=&closed=true. found is false when Gamma knows no such
// market.
func (g *gamma) bySlug(ctx context.Context, slug string) (f gammaFound, found bool, err error) {
	var events []gammaEvent
	if err := g.get(ctx, "/events", url.Values{"slug": {slug}}, &events); err != nil {
		return gammaFound{}, false, err
	}
	for _, e := range events {
		if m, ok := pick(e.Markets, slug); ok {
			return gammaFound{market: m, event: e}, true, nil
		}
	}
	for _, closed := range []string{"", "true"} {
		q := url.Values{"slug": {slug}}
		if closed != "" {
			q.Set("closed", closed)
		}
		var markets []gammaMarket
		if err := g.get(ctx, "/markets", q, &markets); err != nil {
			return gammaFound{}, false, err
		}
		if m, ok := pick(markets, slug); ok {
			return withEvent(m), true, nil
		}
	}
	return gammaFound{}, false, nil
}

// withEvent pairs a /markets answer with the first event it names.
func withEvent(m gammaMarket) gammaFound {
	f := gammaFound{market: m}
	if len(m.Events) > 0 {
		f.event = m.Events[0]
	}
	return f
}

// pick returns the market with the slug, else the only market.
func pick(ms []gammaMarket, slug string) (gammaMarket, bool) {
	for _, m := range ms {
		if m.Slug == slug {
			return m, true
		}
	}
	if len(ms) == 1 {
		return ms[0], true
	}
	return gammaMarket{}, false
}

// byID looks a market up by its Gamma id, closed ones first (/markets
// hides them without closed=true). found is false when Gamma has no such
// market.
func (g *gamma) byID(ctx context.Context, id string) (gammaFound, bool, error) {
	for _, closed := range []string{"true", ""} {
		q := url.Values{"id": {id}}
		if closed != "" {
			q.Set("closed", closed)
		}
		var markets []gammaMarket
		if err := g.get(ctx, "/markets", q, &markets); err != nil {
			return gammaFound{}, false, err
		}
		for _, m := range markets {
			if string(m.ID) == id {
				return withEvent(m), true, nil
			}
		}
	}
	return gammaFound{}, false, nil
}

// applyDetails copies what Gamma says of a market beside SPEC's fields
// into m: the upstream slug, fee schedule, tick and minimum order, and the
// reference prices once published. Fields Gamma leaves out keep m's.
func applyDetails(m *store.Market, f gammaFound) {
	g := f.market
	if g.Slug != "" {
		m.UpstreamSlug = g.Slug
	}
	applyFees(m, g)
	// A market whose tick changes were recorded with their times keeps the
	// tick the last of them put in force: Gamma answers from a cache
	// (minutes old), and a change it has not caught up with (a 5m
	// market's tick goes to 0.001 near its end) would otherwise be undone
	// by the resolution, leaving tick_size contradicting tick_size_changes.
	// An imported market may carry its changes without a tick: the last
	// change is its tick then.
	switch n := len(m.TickSizeChanges); {
	case n > 0:
		if last := m.TickSizeChanges[n-1].TickSize; m.TickSize == nil {
			m.TickSize = &last
		}
	case g.OrderPriceMinTickSize.Set && g.OrderPriceMinTickSize.V > 0 && g.OrderPriceMinTickSize.V < 1:
		if m.TickSize == nil || *m.TickSize != g.OrderPriceMinTickSize.V {
			m.TickSize = g.OrderPriceMinTickSize.Ptr()
		}
	}
	if g.OrderMinSize.Set && g.OrderMinSize.V > 0 {
		m.MinOrderSize = g.OrderMinSize.Ptr()
	}
	if p := f.event.EventMetadata.PriceToBeat; p.Set {
		m.PriceToBeat = p.Ptr()
	}
	if p := f.event.EventMetadata.FinalPrice; p.Set {
		m.FinalPrice = p.Ptr()
	}
}

// applyFees copies Gamma's fee type and schedule of a market into m: a
// schedule given is the market's (its rebate too, null where it gives
// none); the first crypto fee type, which Gamma gave no schedule, records
// the schedule its name stands for. Fields Gamma leaves out keep m's.
func applyFees(m *store.Market, g gammaMarket) {
	if g.FeeType != "" {
		m.FeeType = g.FeeType
	}
	switch {
	case g.FeeSchedule != nil && g.FeeSchedule.Rate.Set:
		m.TakerFeeRate = g.FeeSchedule.Rate.Ptr()
		if g.FeeSchedule.Exponent.Set {
			e := int(math.Round(g.FeeSchedule.Exponent.V))
			m.FeeExponent = &e
		}
		// The schedule Gamma gives is the market's: one without a
		// rebateRate has no maker rebate (null), whatever was stored.
		m.MakerRebateRate = g.FeeSchedule.RebateRate.Ptr()
	case g.FeeType == store.FeeTypeCrypto && (g.FeesEnabled == nil || bool(*g.FeesEnabled)):
		// Polymarket's first crypto fee type came without a schedule: its
		// name is the schedule (REFERENCE.md), rate 0.25, exponent 2 and
		// the factor p the fee type adds (store.Market.FeeTimesPrice).
		rate, exp := store.FeeTypeCryptoRate, store.FeeTypeCryptoExponent
		m.TakerFeeRate, m.FeeExponent = &rate, &exp
	}
}

// toMarket builds the store record of the upstream market g, found for the
// window [start, end) of coin c and type mt. Gamma's eventStartTime and
// endDate, when given, are the market's times (startDate is when trading
// opened, often a day earlier); the window fills in what Gamma leaves out.
// note describes a disagreement between the two, for the log: a slug
// scheme whose windows are wrong. A market whose length is far from the
// window's is refused: it is not the market of this series.
func toMarket(f gammaFound, c store.Coin, mt store.MarketType, start, end time.Time) (m store.Market, note string, err error) {
	g := f.market
	if strings.TrimSpace(string(g.ID)) == "" {
		return store.Market{}, "", fmt.Errorf("%w: market %q has no id", errMalformed, g.Slug)
	}
	up, down, err := g.tokens()
	if err != nil {
		return store.Market{}, "", err
	}
	var notes []string
	s, e := start, end
	if t, ok := parseTime(g.EventStartTime); ok {
		s = t
		if !t.Equal(start) {
			notes = append(notes, fmt.Sprintf("eventStartTime %s, window starts %s", t.Format(time.RFC3339), start.Format(time.RFC3339)))
		}
	}
	if t, ok := parseTime(g.EndDate); ok {
		e = t
		if !t.Equal(end) {
			notes = append(notes, fmt.Sprintf("endDate %s, window ends %s", t.Format(time.RFC3339), end.Format(time.RFC3339)))
		}
	} else if !s.Equal(start) {
		e = s.Add(end.Sub(start))
	}
	if d, want := e.Sub(s), end.Sub(start); d <= 0 || d < want-want/8 || d > want+want/8 {
		return store.Market{}, "", fmt.Errorf("%w: market %s runs %s to %s, the window %s to %s", errMalformed, g.ID,
			s.Format(time.RFC3339), e.Format(time.RFC3339), start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	m = store.Market{
		Slug:          Slug(c, mt, s),
		MarketID:      string(g.ID),
		EventID:       string(f.event.ID),
		Coin:          c,
		MarketType:    mt,
		StartTime:     s,
		EndTime:       e,
		ConditionID:   g.ConditionID,
		ClobTokenUp:   up,
		ClobTokenDown: down,
	}
	applyDetails(&m, f)
	return m, strings.Join(notes, "; "), nil
}
