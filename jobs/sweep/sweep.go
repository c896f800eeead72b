package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// Kinds of search and split, and the objectives (DESIGN 14).
const (
	SearchGrid   = "GRID"
	SearchRandom = "RANDOM"

	SplitNone        = "NONE"
	SplitHoldout     = "HOLDOUT"
	SplitWalkForward = "WALK_FORWARD"

	ObjectiveTotalPnL        = "total_pnl"
	ObjectiveEVPerTrade      = "ev_per_trade"
	ObjectiveSharpePerMarket = "sharpe_per_market"
	ObjectiveSQN             = "sqn"
)

// Bounds of a sweep body that hold whatever the plan.
const (
	MaxParameters         = 4
	MaxValues             = 10_000 // values one parameter expands to
	DefaultTestFraction   = 0.3
	MinTestFraction       = 0.1
	MaxTestFraction       = 0.5
	DefaultEmbargoMarkets = 1
	MinFolds, MaxFolds    = 2, 10
)

// Objectives returns the allowed values of objective, the default first.
func Objectives() []string {
	return []string{ObjectiveTotalPnL, ObjectiveEVPerTrade, ObjectiveSharpePerMarket, ObjectiveSQN}
}

// Request is the body of POST /v1/sweeps.
type Request struct {
	// Strategy is a replay body without marketSlug.
	Strategy   replay.Strategy `json:"strategy"`
	Parameters []Parameter     `json:"parameters"`
	Search     Search          `json:"search"`
	Markets    Markets         `json:"markets"`
	Split      Split           `json:"split"`
	Objective  string          `json:"objective"`
}

// Parameter is one swept value of the strategy: a JSON Pointer into it and
// either a list of values or a range. After Normalize, Values holds the
// expanded range and Range is nil.
type Parameter struct {
	Path   string `json:"path"`
	Values []any  `json:"values,omitempty"`
	Range  *Range `json:"range,omitempty"`
}

// Range is from, from+step, … up to to, inclusive.
type Range struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
	Step float64 `json:"step"`
}

// Search says which combinations of the parameters' values are tried.
type Search struct {
	Kind   string `json:"kind"`
	Trials int    `json:"trials,omitempty"` // RANDOM only
	Seed   uint64 `json:"seed,omitempty"`   // RANDOM only
}

// Markets chooses the markets: the newest Count resolved markets of the
// coin and type in the caller's window (and within StartTime, EndTime when
// given), ordered by start_time.
type Markets struct {
	Coin       store.Coin       `json:"coin"`
	MarketType store.MarketType `json:"market_type"`
	StartTime  *time.Time       `json:"start_time,omitempty"`
	EndTime    *time.Time       `json:"end_time,omitempty"`
	Count      int              `json:"count"`
}

// Split says which markets train and which test.
type Split struct {
	Kind           string  `json:"kind"`
	TestFraction   float64 `json:"testFraction,omitempty"` // HOLDOUT
	EmbargoMarkets int     `json:"embargoMarkets"`         // HOLDOUT, WALK_FORWARD
	Folds          int     `json:"folds,omitempty"`        // WALK_FORWARD
}

// invalid is a VALIDATION_ERROR on the field at path.
func invalid(path, format string, args ...any) *replay.Error {
	return &replay.Error{Code: replay.CodeValidation, Field: path, Message: fmt.Sprintf(format, args...)}
}

// Keys of each object of the body, for refusing unknown ones by name.
var (
	requestKeys   = []string{"strategy", "parameters", "search", "markets", "split", "objective"}
	parameterKeys = []string{"path", "values", "range"}
	rangeKeys     = []string{"from", "to", "step"}
	searchKeys    = []string{"kind", "trials", "seed"}
	marketsKeys   = []string{"coin", "market_type", "start_time", "end_time", "count"}
	splitKeys     = []string{"kind", "testFraction", "embargoMarkets", "folds"}
)

// Decode reads a sweep body. A key it does not have, a value of the wrong
// JSON type or a whole number given as a fraction is a *replay.Error with
// code VALIDATION_ERROR naming its path; Normalize judges the rest.
func Decode(b []byte) (Request, error) {
	var w struct {
		Strategy   json.RawMessage   `json:"strategy"`
		Parameters []json.RawMessage `json:"parameters"`
		Search     json.RawMessage   `json:"search"`
		Markets    json.RawMessage   `json:"markets"`
		Split      json.RawMessage   `json:"split"`
		Objective  *string           `json:"objective"`
	}
	// One JSON value and nothing after it (but white space): the decoder
	// below stops at the end of the first, and would take the rest for
	// none of the body's business.
	if !json.Valid(b) {
		var raw json.RawMessage
		err := json.Unmarshal(b, &raw)
		return Request{}, invalid("", "the body is not valid JSON: %v", err)
	}
	if err := replay.CheckKeys(b, "", requestKeys, nil); err != nil {
		return Request{}, err
	}
	if err := strict(b, &w, ""); err != nil {
		return Request{}, err
	}
	var r Request
	if len(w.Strategy) == 0 || string(w.Strategy) == "null" {
		return Request{}, invalid("strategy", "strategy is missing: give a replay body without marketSlug")
	}
	st, err := replay.DecodeStrategy(w.Strategy)
	if err != nil {
		return Request{}, prefixed("strategy", err)
	}
	r.Strategy = st
	if w.Objective != nil {
		r.Objective = *w.Objective
	}
	for i, raw := range w.Parameters {
		path := fmt.Sprintf("parameters[%d]", i)
		if err := replay.CheckKeys(raw, path, parameterKeys, nil); err != nil {
			return Request{}, err
		}
		var p struct {
			Path   *string           `json:"path"`
			Values []json.RawMessage `json:"values"`
			Range  json.RawMessage   `json:"range"`
		}
		if err := strict(raw, &p, path); err != nil {
			return Request{}, err
		}
		var par Parameter
		if p.Path != nil {
			par.Path = *p.Path
		}
		for k, v := range p.Values {
			x, err := scalar(v)
			if err != nil {
				return Request{}, invalid(fmt.Sprintf("%s.values[%d]", path, k), "%s.values[%d] %s", path, k, err)
			}
			par.Values = append(par.Values, x)
		}
		if p.Values != nil && par.Values == nil {
			par.Values = []any{}
		}
		if len(p.Range) > 0 && string(p.Range) != "null" {
			if err := replay.CheckKeys(p.Range, path+".range", rangeKeys, nil); err != nil {
				return Request{}, err
			}
			// Tagged: a value of the wrong type is named by its JSON key.
			var rg struct {
				From *float64 `json:"from"`
				To   *float64 `json:"to"`
				Step *float64 `json:"step"`
			}
			if err := strict(p.Range, &rg, path+".range"); err != nil {
				return Request{}, err
			}
			for _, f := range []struct {
				name string
				v    *float64
			}{{"from", rg.From}, {"to", rg.To}, {"step", rg.Step}} {
				if f.v == nil {
					return Request{}, invalid(path+".range."+f.name, "%s.range.%s is missing: a range is {from, to, step}", path, f.name)
				}
			}
			par.Range = &Range{From: *rg.From, To: *rg.To, Step: *rg.Step}
		}
		r.Parameters = append(r.Parameters, par)
	}
	if w.Parameters != nil && r.Parameters == nil {
		r.Parameters = []Parameter{}
	}
	if err := decodeObject(w.Search, "search", searchKeys, func(b []byte) error {
		var s struct {
			Kind   *string  `json:"kind"`
			Trials *float64 `json:"trials"`
			Seed   *float64 `json:"seed"`
		}
		if err := strict(b, &s, "search"); err != nil {
			return err
		}
		if s.Kind != nil {
			r.Search.Kind = *s.Kind
		}
		var err error
		if r.Search.Trials, err = whole(s.Trials, "search.trials"); err != nil {
			return err
		}
		if s.Seed != nil {
			if *s.Seed < 0 || *s.Seed != math.Trunc(*s.Seed) || *s.Seed > 1<<53 {
				return invalid("search.seed", "search.seed %s is not allowed: it must be a whole number from 0 to 2^53", replay.FormatNum(*s.Seed))
			}
			r.Search.Seed = uint64(*s.Seed)
		}
		return nil
	}); err != nil {
		return Request{}, err
	}
	if err := decodeObject(w.Markets, "markets", marketsKeys, func(b []byte) error {
		var m struct {
			Coin       *string          `json:"coin"`
			MarketType *string          `json:"market_type"`
			StartTime  *json.RawMessage `json:"start_time"`
			EndTime    *json.RawMessage `json:"end_time"`
			Count      *float64         `json:"count"`
		}
		if err := strict(b, &m, "markets"); err != nil {
			return err
		}
		if m.Coin != nil {
			c, ok := store.ParseCoin(*m.Coin)
			if !ok {
				c = store.Coin(*m.Coin) // refused by validate, as written
			}
			r.Markets.Coin = c
		}
		if m.MarketType != nil {
			r.Markets.MarketType = store.MarketType(*m.MarketType)
		}
		var err error
		if r.Markets.StartTime, err = instant(m.StartTime, "markets.start_time"); err != nil {
			return err
		}
		if r.Markets.EndTime, err = instant(m.EndTime, "markets.end_time"); err != nil {
			return err
		}
		r.Markets.Count, err = whole(m.Count, "markets.count")
		return err
	}); err != nil {
		return Request{}, err
	}
	if err := decodeObject(w.Split, "split", splitKeys, func(b []byte) error {
		var s struct {
			Kind           *string  `json:"kind"`
			TestFraction   *float64 `json:"testFraction"`
			EmbargoMarkets *float64 `json:"embargoMarkets"`
			Folds          *float64 `json:"folds"`
		}
		if err := strict(b, &s, "split"); err != nil {
			return err
		}
		if s.Kind != nil {
			r.Split.Kind = *s.Kind
		}
		if s.TestFraction != nil {
			r.Split.TestFraction = *s.TestFraction
			// An explicit 0 is out of HOLDOUT's range, told from an absent
			// one (the default). Under another kind, which has no test
			// fraction, 0 is as absent, as folds 0 is under HOLDOUT and
			// embargoMarkets 0 under NONE: it was "out of range: between
			// 0.1 and 0.5", and a WALK_FORWARD that followed that advice
			// was told testFraction belongs to HOLDOUT.
			if *s.TestFraction == 0 && r.Split.Kind == SplitHoldout {
				return invalid("split.testFraction", "split.testFraction 0 is out of range: it must be between 0.1 and 0.5 (default 0.3)")
			}
		}
		var err error
		if r.Split.Folds, err = whole(s.Folds, "split.folds"); err != nil {
			return err
		}
		if s.EmbargoMarkets != nil {
			if r.Split.EmbargoMarkets, err = whole(s.EmbargoMarkets, "split.embargoMarkets"); err != nil {
				return err
			}
			if r.Split.EmbargoMarkets < 0 { // before −1 comes to mean an explicit 0
				return invalid("split.embargoMarkets", "split.embargoMarkets %d is out of range: 0 to 1000 markets", r.Split.EmbargoMarkets)
			}
			if r.Split.EmbargoMarkets == 0 {
				r.Split.EmbargoMarkets = noEmbargo
			}
		}
		return nil
	}); err != nil {
		return Request{}, err
	}
	return r, nil
}

// noEmbargo stands for an explicit embargoMarkets of 0 until Normalize, so
// that it is told from an absent one (default 1).
const noEmbargo = -1

func decodeObject(raw json.RawMessage, path string, keys []string, read func([]byte) error) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := replay.CheckKeys(raw, path, keys, nil); err != nil {
		return err
	}
	return read(raw)
}

// strict decodes b into v and names the path of a value of the wrong type.
func strict(b []byte, v any, path string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if path != "" {
				field = strings.TrimSuffix(path+"."+field, ".")
			}
			if field == "" { // the body itself, e.g. [] for {...}
				return invalid("", "the body must be a JSON %s, not a JSON %s", replay.JSONKind(te.Type), te.Value)
			}
			return invalid(field, "%s must be a JSON %s, not %s", field, replay.JSONKind(te.Type), te.Value)
		}
		where := "the body"
		if path != "" {
			where = path
		}
		return invalid(path, "%s is not valid JSON of the right shape: %v", where, err)
	}
	return nil
}

// prefixed puts path before the field of a replay error from the strategy.
func prefixed(path string, err error) error {
	var re *replay.Error
	if errors.As(err, &re) {
		e := *re
		if e.Field != "" {
			e.Field = path + "." + e.Field
		}
		e.Message = path + ": " + e.Message
		return &e
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := path + "." + te.Field
		return invalid(field, "%s must be a JSON %s, not %s", field, replay.JSONKind(te.Type), te.Value)
	}
	return invalid(path, "%s is not a valid replay body: %v", path, err)
}

// scalar reads a parameter value: a number, a string or a boolean.
func scalar(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("is not valid JSON")
	}
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("is not a finite number")
		}
		return x, nil
	case string, bool:
		return x, nil
	}
	return nil, fmt.Errorf("must be a number, a string or a boolean")
}

// whole reads an optional whole number (0 when absent).
func whole(v *float64, path string) (int, error) {
	if v == nil {
		return 0, nil
	}
	switch {
	case *v != math.Trunc(*v):
		return 0, invalid(path, "%s %s is not a whole number", path, replay.FormatNum(*v))
	case math.Abs(*v) > 1<<31:
		return 0, invalid(path, "%s %s is out of range: far above any plan's limit", path, replay.FormatNum(*v))
	}
	return int(*v), nil
}

// instant reads a time given as RFC 3339 or as epoch milliseconds.
func instant(raw *json.RawMessage, path string) (*time.Time, error) {
	if raw == nil || string(*raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(*raw, &s); err == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, invalid(path, "%s %q is not a time: give RFC 3339 (2026-11-01T00:00:00Z) or epoch milliseconds", path, replay.ClipEcho(s))
		}
		t = t.UTC()
		return &t, nil
	}
	var ms float64
	if err := json.Unmarshal(*raw, &ms); err != nil || ms != math.Trunc(ms) || math.Abs(ms) > 1e15 {
		return nil, invalid(path, "%s is not a time: give RFC 3339 (2026-11-01T00:00:00Z) or epoch milliseconds", path)
	}
	// As GET /v1/markets reads its times: epoch seconds of this century
	// (ten or eleven digits), read as milliseconds, are days of January
	// 1970, before any market: a start_time that filters nothing, an
	// end_time that leaves no market.
	switch {
	case ms < 0 || ms > 253402300799999: // year 9999
		return nil, invalid(path, "%s %s is out of range: use epoch milliseconds between 0 and 253402300799999, or RFC 3339", path, replay.FormatNum(ms))
	case ms >= 1e9 && ms < 1e11:
		return nil, invalid(path, "%s %s looks like epoch seconds (%s): times are epoch milliseconds, %s000, or RFC 3339",
			path, replay.FormatNum(ms), time.Unix(int64(ms), 0).UTC().Format(time.RFC3339), replay.FormatNum(ms))
	}
	t := time.UnixMilli(int64(ms)).UTC()
	return &t, nil
}
