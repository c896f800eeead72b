package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/updown/updown/jobs/replay"
)

// valueKind is what a sweepable path holds.
type valueKind uint8

const (
	kindNumber valueKind = iota + 1
	kindEnum
	kindBool
)

// topLevel are the strategy's sweepable keys and what each holds, with
// the allowed values of an enum.
var topLevel = map[string]struct {
	kind   valueKind
	values func() []string
}{
	"positionSize":        {kind: kindNumber},
	"maxLossPercent":      {kind: kindNumber},
	"feeRate":             {kind: kindNumber},
	"feeExponent":         {kind: kindNumber},
	"latencyMs":           {kind: kindNumber},
	"reentryCooldownMs":   {kind: kindNumber},
	"maxEntriesPerMarket": {kind: kindNumber},
	"limitOffsetTicks":    {kind: kindNumber},
	"cancelAfterMs":       {kind: kindNumber},
	"side":                {kind: kindEnum, values: replay.Sides},
	"orderType":           {kind: kindEnum, values: replay.OrderTypes},
	"feeModel":            {kind: kindEnum, values: replay.FeeModels},
	"queueModel":          {kind: kindEnum, values: replay.QueueModels},
	"postOnly":            {kind: kindBool},
	"includeRebates":      {kind: kindBool},
}

// sweepable lists the sweepable paths for messages.
const sweepable = "/positionSize, /maxLossPercent, /feeRate, /feeExponent, /latencyMs, /reentryCooldownMs, " +
	"/maxEntriesPerMarket, /limitOffsetTicks, /cancelAfterMs, /side, /orderType, /feeModel, /queueModel, " +
	"/postOnly, /includeRebates, and /entryConditions/N/value, /field or /operator (likewise exitConditions)"

// splitPointer parses an RFC 6901 JSON Pointer into its reference tokens.
func splitPointer(p string) ([]string, bool) {
	if p == "" || p[0] != '/' {
		return nil, false
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		// ~1 is /, ~0 is ~; any other ~ is malformed.
		for k := 0; k < len(t); k++ {
			if t[k] == '~' && (k+1 == len(t) || t[k+1] != '0' && t[k+1] != '1') {
				return nil, false
			}
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, true
}

// strategyJSON is the normalized strategy as a JSON object.
func strategyJSON(s replay.Strategy) (map[string]any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("sweep: encode the strategy: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("sweep: decode the strategy: %w", err)
	}
	return m, nil
}

// pathKind checks that path names a sweepable value of the strategy and
// says what it holds; enums carry their allowed values.
func pathKind(base map[string]any, path, at string) (kindOfPath, error) {
	toks, ok := splitPointer(path)
	if !ok {
		return kindOfPath{}, invalid(at, "%s %q is not a JSON Pointer: it starts with / and escapes / as ~1 and ~ as ~0, e.g. /entryConditions/0/value", at, replay.ClipEcho(path))
	}
	if len(toks) == 1 {
		if k, ok := topLevel[toks[0]]; ok {
			kp := kindOfPath{kind: k.kind}
			if k.values != nil {
				kp.enum = k.values()
			}
			return kp, nil
		}
	}
	if len(toks) == 3 && (toks[0] == "entryConditions" || toks[0] == "exitConditions") {
		list, _ := base[toks[0]].([]any)
		i, err := strconv.Atoi(toks[1])
		if err != nil || i < 0 || strconv.Itoa(i) != toks[1] {
			return kindOfPath{}, invalid(at, "%s %q: %q is not a condition index", at, replay.ClipEcho(path), replay.ClipEcho(toks[1]))
		}
		if i >= len(list) {
			return kindOfPath{}, invalid(at, "%s %q: the strategy has %d %s", at, replay.ClipEcho(path), len(list), toks[0])
		}
		switch toks[2] {
		case "value":
			return kindOfPath{kind: kindNumber}, nil
		case "field":
			return kindOfPath{kind: kindEnum, enum: replay.Fields()}, nil
		case "operator":
			return kindOfPath{kind: kindEnum, enum: replay.Operators()}, nil
		}
	}
	return kindOfPath{}, invalid(at, "%s %q is not a sweepable value of the strategy: sweep one of %s", at, replay.ClipEcho(path), sweepable)
}

type kindOfPath struct {
	kind valueKind
	enum []string
}

// expand checks a parameter's values against its path's kind, or expands
// its range; at is the parameter's path in the body.
func expand(p Parameter, k kindOfPath, at string) ([]any, error) {
	switch {
	case p.Range != nil && p.Values != nil:
		return nil, invalid(at, "%s has both values and range: give one", at)
	case p.Range != nil:
		if k.kind != kindNumber {
			return nil, invalid(at+".range", "%s.range: %s is not a number; list its values instead", at, p.Path)
		}
		return expandRange(*p.Range, at+".range")
	case len(p.Values) == 0:
		return nil, invalid(at+".values", "%s needs values (1 to %d) or a range {from, to, step}", at, MaxValues)
	case len(p.Values) > MaxValues:
		return nil, invalid(at+".values", "%s.values has %d values: at most %d are allowed", at, len(p.Values), MaxValues)
	}
	seen := map[string]bool{}
	for i, v := range p.Values {
		vp := fmt.Sprintf("%s.values[%d]", at, i)
		switch k.kind {
		case kindNumber:
			f, ok := v.(float64)
			if !ok {
				return nil, invalid(vp, "%s must be a number: %s holds one", vp, p.Path)
			}
			if f == 0 {
				v = 0.0 // -0 is 0: the same trial, which must not run twice
				p.Values[i] = v
			}
		case kindBool:
			if _, ok := v.(bool); !ok {
				return nil, invalid(vp, "%s must be true or false: %s is a boolean", vp, p.Path)
			}
		case kindEnum:
			s, ok := v.(string)
			if !ok || !contains(k.enum, s) {
				return nil, invalid(vp, "%s must be one of %s", vp, strings.Join(k.enum, ", "))
			}
		}
		b, _ := json.Marshal(v)
		if seen[string(b)] {
			return nil, invalid(vp, "%s repeats %s: the values must differ", vp, b)
		}
		seen[string(b)] = true
	}
	return p.Values, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// expandRange lists from, from+step, … ≤ to, each rounded to the decimals
// the three numbers are written with, so that steps of 0.1 give 0.3 and
// not 0.30000000000000004.
func expandRange(r Range, at string) ([]any, error) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"from", r.From}, {"to", r.To}, {"step", r.Step}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return nil, invalid(at+"."+f.name, "%s.%s is not a finite number", at, f.name)
		}
	}
	switch {
	case r.Step <= 0:
		return nil, invalid(at+".step", "%s.step %s must be above 0", at, replay.FormatNum(r.Step))
	case r.From > r.To:
		return nil, invalid(at+".from", "%s.from %s is above to %s", at, replay.FormatNum(r.From), replay.FormatNum(r.To))
	}
	d := max(decimals(r.From), decimals(r.To), decimals(r.Step))
	scale := math.Pow(10, float64(d))
	from, to, step := math.Round(r.From*scale), math.Round(r.To*scale), math.Round(r.Step*scale)
	// A range is counted in at most 12 decimals: a finer step rounds to
	// 0 there, and would never leave from.
	if step == 0 {
		return nil, invalid(at+".step", "%s.step %s is below the smallest step, 1e-12", at, replay.FormatNum(r.Step))
	}
	n := math.Floor((to-from)/step) + 1
	switch {
	case math.IsInf(from, 0) || math.IsInf(to, 0):
		// A number near the largest float, written with decimals.
		return nil, invalid(at, "%s: from %s and to %s are too large to count in steps of %s", at, replay.FormatNum(r.From), replay.FormatNum(r.To), replay.FormatNum(r.Step))
	case n > MaxValues:
		c := uint64(math.MaxUint64) // count's "more than 10^19"
		if n < math.MaxUint64 {
			c = uint64(n)
		}
		return nil, invalid(at, "%s expands to %s values: at most %s a parameter", at, count(c), count(MaxValues))
	}
	// The i-th value is from + i·step, counted, not summed: past 2^53 a
	// step can be below a float's spacing, where from + step == from and
	// a sum never reached to.
	out := make([]any, 0, int(n))
	for i := range int(n) {
		v := (from + float64(i)*step) / scale
		if len(out) > 0 && v == out[len(out)-1] {
			return nil, invalid(at+".step", "%s.step %s is finer than a float can tell apart at %s: the range's values would repeat", at, replay.FormatNum(r.Step), replay.FormatNum(v))
		}
		out = append(out, v)
	}
	return out, nil
}

// decimals is how many decimals the shortest form of x has (up to 12).
func decimals(x float64) int {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return min(len(s)-i-1, 12)
	}
	return 0
}

// Apply returns base with each path set to its value, decoded and
// normalized as POST /v1/replay would take it: a combination the replay
// validator refuses is its *replay.Error.
func Apply(base replay.Strategy, paths []string, values []any) (replay.Strategy, error) {
	m, err := strategyJSON(base)
	if err != nil {
		return replay.Strategy{}, err
	}
	for i, p := range paths {
		toks, ok := splitPointer(p)
		if !ok {
			return replay.Strategy{}, invalid("parameters", "%q is not a JSON Pointer", replay.ClipEcho(p))
		}
		if len(toks) == 1 {
			m[toks[0]] = values[i]
			continue
		}
		list, _ := m[toks[0]].([]any)
		k, err := strconv.Atoi(toks[1])
		if err != nil || k < 0 || k >= len(list) {
			return replay.Strategy{}, invalid("parameters", "%s names no condition of the strategy", p)
		}
		c, _ := list[k].(map[string]any)
		if c == nil {
			return replay.Strategy{}, invalid("parameters", "%s names no condition of the strategy", p)
		}
		c[toks[2]] = values[i]
	}
	b, err := json.Marshal(m)
	if err != nil {
		return replay.Strategy{}, fmt.Errorf("sweep: encode a trial: %w", err)
	}
	s, err := replay.DecodeStrategy(b)
	if err != nil {
		return replay.Strategy{}, prefixed("strategy", err)
	}
	if err := s.Normalize(); err != nil {
		return replay.Strategy{}, err
	}
	return s, nil
}
