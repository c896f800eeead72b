package collect

import (
	"context"
	"fmt"
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
	Events         []struct {
		ID flexString `json:"id"`
	} `json:"events"`
}

// gammaEvent is an event as /events answers it.
type gammaEvent struct {
	ID      flexString    `json:"id"`
	Slug    string        `json:"slug"`
	Markets []gammaMarket `json:"markets"`
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

// outcome returns the winning outcome of a closed market ("Up" or "Down"),
// or "" while Gamma does not say: not closed, or prices not settled at 1
// and 0.
func (g gammaMarket) outcome() string {
	if !bool(g.Closed) || len(g.OutcomePrices) != 2 || len(g.Outcomes) != 2 {
		return ""
	}
	win := -1
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
		case p > 0.01:
			return "" // not settled
		}
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

// bySlug looks a market up by its upstream slug: /events?slug= (which also
// gives the event id), then /markets?slug=. found is false when Gamma knows
// no such market yet.
func (g *gamma) bySlug(ctx context.Context, slug string) (m gammaMarket, eventID string, found bool, err error) {
	var events []gammaEvent
	if err := g.get(ctx, "/events", url.Values{"slug": {slug}}, &events); err != nil {
		return gammaMarket{}, "", false, err
	}
	for _, e := range events {
		if m, ok := pick(e.Markets, slug); ok {
			return m, string(e.ID), true, nil
		}
	}
	var markets []gammaMarket
	if err := g.get(ctx, "/markets", url.Values{"slug": {slug}}, &markets); err != nil {
		return gammaMarket{}, "", false, err
	}
	if m, ok := pick(markets, slug); ok {
		eventID := ""
		if len(m.Events) > 0 {
			eventID = string(m.Events[0].ID)
		}
		return m, eventID, true, nil
	}
	return gammaMarket{}, "", false, nil
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

// byID looks a market up by its Gamma id. found is false when Gamma has no
// such market.
func (g *gamma) byID(ctx context.Context, id string) (gammaMarket, bool, error) {
	var markets []gammaMarket
	if err := g.get(ctx, "/markets", url.Values{"id": {id}}, &markets); err != nil {
		return gammaMarket{}, false, err
	}
	for _, m := range markets {
		if string(m.ID) == id {
			return m, true, nil
		}
	}
	return gammaMarket{}, false, nil
}

// toMarket builds the store record of the upstream market g, found for the
// window [start, end) of coin c and type mt. Gamma's eventStartTime and
// endDate, when given, are the market's times (startDate is when trading
// opened, often a day earlier); the window fills in what Gamma leaves out.
// note describes a disagreement between the two, for the log: a slug
// scheme whose windows are wrong. A market whose length is far from the
// window's is refused: it is not the market of this series.
func toMarket(g gammaMarket, eventID string, c store.Coin, mt store.MarketType, start, end time.Time) (m store.Market, note string, err error) {
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
	return store.Market{
		Slug:          Slug(c, mt, s),
		MarketID:      string(g.ID),
		EventID:       eventID,
		Coin:          c,
		MarketType:    mt,
		StartTime:     s,
		EndTime:       e,
		ConditionID:   g.ConditionID,
		ClobTokenUp:   up,
		ClobTokenDown: down,
	}, strings.Join(notes, "; "), nil
}
