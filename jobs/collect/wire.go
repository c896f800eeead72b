package collect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The upstreams send numbers as strings ("0.52"), lists as JSON encoded
// into a string ("[\"Up\", \"Down\"]"), ids as strings or numbers, and
// leave fields out. These types accept every form seen, so that a shape
// change upstream costs a log line, not the collector.

// flexString is a JSON string or number, kept as text.
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = ""
		return nil
	case len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0:
		// No escapes: the text between the quotes is the string (the
		// decoder checked the JSON before calling).
		*s = flexString(b[1 : len(b)-1])
		return nil
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = flexString(v)
		return nil
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("want a string or number, got %.40s", b)
		}
		*s = flexString(n.String())
		return nil
	}
}

// flexFloat is a JSON number or a string holding one. Set is false when
// the field was absent, null or an empty string.
type flexFloat struct {
	V   float64
	Set bool
}

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	// The common forms, "0.52" and 0.52, without a detour through a
	// string value: books are thousands of these a second.
	if len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 {
		b = bytes.TrimSpace(b[1 : len(b)-1])
		if len(b) == 0 {
			*f = flexFloat{}
			return nil
		}
	} else if len(b) > 0 && b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		var s flexString
		if err := s.UnmarshalJSON(b); err != nil {
			return err
		}
		if strings.TrimSpace(string(s)) == "" {
			*f = flexFloat{}
			return nil
		}
		b = []byte(s)
	}
	v, err := parseNum(string(b))
	if err != nil {
		return err
	}
	*f = flexFloat{V: v, Set: true}
	return nil
}

// flexBool is a JSON boolean or a string "true"/"false".
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	var s flexString
	if err := s.UnmarshalJSON(b); err != nil {
		var v bool
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*f = flexBool(v)
		return nil
	}
	switch strings.ToLower(strings.TrimSpace(string(s))) {
	case "true", "1":
		*f = true
	case "false", "0", "":
		*f = false
	default:
		return fmt.Errorf("want a boolean, got %q", s)
	}
	return nil
}

// jsonList is a JSON array of strings or numbers, or a string holding such
// an array, as Gamma sends outcomes, outcomePrices and clobTokenIds.
type jsonList []string

func (l *jsonList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*l = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var inner string
		if err := json.Unmarshal(b, &inner); err != nil {
			return err
		}
		if strings.TrimSpace(inner) == "" {
			*l = nil
			return nil
		}
		b = []byte(inner)
	}
	var items []flexString
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("want a list: %w", err)
	}
	out := make(jsonList, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	*l = out
	return nil
}

// parseNum parses a decimal number an upstream sent, rejecting NaN and
// infinities, which no upstream means.
func parseNum(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a finite number: %q", s)
	}
	return v, nil
}

// timeLayouts are the forms Gamma writes times in: RFC 3339 with or without
// fractions, Postgres-style "2025-12-29 01:46:12+00", and bare dates.
var timeLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
}

// parseTime parses an upstream time; ok is false for an empty or unknown
// form.
func parseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// errMalformed marks an upstream answer that decoded as JSON but does not
// make sense (a book level without a price, a token list of three).
var errMalformed = errors.New("malformed upstream data")
