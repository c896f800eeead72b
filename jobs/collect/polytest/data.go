package polytest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// dataTrade is a trade as the Data API's GET /trades lists it: numbers as
// JSON numbers, the time in Unix seconds, the asset the token id, the
// outcome as Gamma names it with its index in the market's outcomes.
type dataTrade struct {
	ProxyWallet           string  `json:"proxyWallet"`
	Side                  string  `json:"side"`
	Asset                 string  `json:"asset"`
	ConditionID           string  `json:"conditionId"`
	Size                  float64 `json:"size"`
	Price                 float64 `json:"price"`
	Timestamp             int64   `json:"timestamp"`
	Title                 string  `json:"title"`
	Slug                  string  `json:"slug"`
	Icon                  string  `json:"icon"`
	EventSlug             string  `json:"eventSlug"`
	Outcome               string  `json:"outcome"`
	OutcomeIndex          int     `json:"outcomeIndex"`
	Name                  string  `json:"name"`
	Pseudonym             string  `json:"pseudonym"`
	Bio                   string  `json:"bio"`
	ProfileImage          string  `json:"profileImage"`
	ProfileImageOptimized string  `json:"profileImageOptimized"`
	TransactionHash       string  `json:"transactionHash"`
}

// The Data API's bounds on paging /trades.
const (
	dataDefaultLimit = 100
	dataMaxLimit     = 10_000
	dataMaxOffset    = 10_000
)

// dataTrades answers GET /trades?market=<condition ids>&limit=&offset=:
// the markets' trades (their tapes, as every socket would have heard
// them) newest first, the taker's side of each fill (takerOnly, the
// default; the fake models no maker rows). An unknown condition id lists
// nothing; a limit or offset past the API's bounds is 400.
func (s *Server) dataTrades(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, offset := dataDefaultLimit, 0
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"limit", &limit, dataMaxLimit}, {"offset", &offset, dataMaxOffset}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > p.max {
			http.Error(w, fmt.Sprintf(`{"error":"%s must be an integer in [0, %d]"}`, p.name, p.max), http.StatusBadRequest)
			return
		}
		*p.dst = n
	}
	markets := map[string]bool{}
	for _, v := range q["market"] {
		for id := range strings.SplitSeq(v, ",") {
			markets[strings.TrimSpace(id)] = true
		}
	}
	now := s.opts.Clock()
	out := []dataTrade{}
	s.mu.Lock()
	for _, m := range s.byID {
		if !markets[m.ConditionID] {
			continue
		}
		title := fmt.Sprintf("%s Up or Down", m.Coin)
		for _, token := range []string{m.UpToken, m.DownToken} {
			outcome, index := "Up", 0
			if token == m.DownToken {
				outcome, index = "Down", 1
			}
			if m.DownFirst {
				index = 1 - index
			}
			for _, tr := range s.advanceTape(token, now).trades {
				out = append(out, dataTrade{
					ProxyWallet: "0x" + tr.TxHash[2:42], Side: tr.Side, Asset: token, ConditionID: m.ConditionID,
					Size: tr.Size, Price: tr.Price, Timestamp: tr.Time.Unix(), Title: title, Slug: m.Slug, EventSlug: m.Slug,
					Outcome: outcome, OutcomeIndex: index, TransactionHash: tr.TxHash,
				})
			}
		}
	}
	s.mu.Unlock()
	slices.SortStableFunc(out, func(a, b dataTrade) int {
		if c := cmp.Compare(b.Timestamp, a.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(b.TransactionHash, a.TransactionHash)
	})
	out = out[min(offset, len(out)):]
	out = out[:min(limit, len(out))]
	writeJSON(w, out)
}
