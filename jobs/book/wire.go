package book

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrMalformed marks upstream data that decoded as JSON but does not make
// sense (a book level without a price, a change of no side).
var ErrMalformed = errors.New("malformed upstream data")

// FieldError is malformed data (it wraps ErrMalformed) and the event field
// that holds it, as the wire spells it (price, size, side, asset_id,
// timestamp, new_tick_size), for an error that names the field.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// malformed is ErrMalformed in field, its message formatted.
func malformed(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)}
}

// Text is a JSON string or number, kept as text: upstreams send ids both
// ways.
type Text string

// UnmarshalJSON reads a string, a number or null.
func (s *Text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = ""
		return nil
	case len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0:
		// No escapes: the text between the quotes is the string (the
		// decoder checked the JSON before calling).
		*s = Text(b[1 : len(b)-1])
		return nil
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = Text(v)
		return nil
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("want a string or number, got %.40s", b)
		}
		*s = Text(n.String())
		return nil
	}
}

// Num is a JSON number or a string holding one ("0.52"). Set is false
// when the field was absent, null or an empty string.
type Num struct {
	V   float64
	Set bool
}

// UnmarshalJSON reads a number, a string holding one, "" or null.
func (f *Num) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	// The common forms, "0.52" and 0.52, without a detour through a
	// string value: books are thousands of these a second.
	if len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 {
		b = bytes.TrimSpace(b[1 : len(b)-1])
		if len(b) == 0 {
			*f = Num{}
			return nil
		}
	} else if len(b) > 0 && b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		var s Text
		if err := s.UnmarshalJSON(b); err != nil {
			return err
		}
		if strings.TrimSpace(string(s)) == "" {
			*f = Num{}
			return nil
		}
		b = []byte(s)
	}
	v, err := ParseNum(string(b))
	if err != nil {
		return err
	}
	*f = Num{V: v, Set: true}
	return nil
}

// Ptr returns the value as a pointer, nil when unset.
func (f Num) Ptr() *float64 {
	if !f.Set {
		return nil
	}
	v := f.V
	return &v
}

// ParseNum parses a decimal number an upstream sent, rejecting NaN and
// infinities, which no upstream means.
func ParseNum(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a finite number: %q", s)
	}
	return v, nil
}

// Level is one level of a book as the CLOB sends it, {"price":"0.48",
// "size":"30"}.
type Level struct {
	Price Num `json:"price"`
	Size  Num `json:"size"`
}

// UnmarshalJSON reads a level on a fast path: a snapshot decodes some
// forty levels, and encoding/json's per-field work would be most of a
// reader's time. Any other form goes the general way.
func (l *Level) UnmarshalJSON(b []byte) error {
	if price, size, ok := FastLevel(b); ok {
		*l = Level{Price: price, Size: size}
		return nil
	}
	type plain Level
	return json.Unmarshal(b, (*plain)(l))
}

// FastLevel parses an object of exactly the keys price and size, in
// either order, whose values are numbers or strings without escapes; ok
// is false for anything else.
func FastLevel(b []byte) (price, size Num, ok bool) {
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	// str returns the text of a string without escapes at i.
	str := func() ([]byte, bool) {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 || bytes.IndexByte(b[i+1:i+1+j], '\\') >= 0 {
			return nil, false
		}
		s := b[i+1 : i+1+j]
		i += j + 2
		return s, true
	}
	ws()
	if i >= len(b) || b[i] != '{' {
		return price, size, false
	}
	i++
	for n := 0; n < 2; n++ {
		ws()
		key, ok := str()
		if !ok {
			return price, size, false
		}
		ws()
		if i >= len(b) || b[i] != ':' {
			return price, size, false
		}
		i++
		ws()
		var raw []byte
		if i < len(b) && b[i] == '"' {
			if raw, ok = str(); !ok {
				return price, size, false
			}
		} else {
			n := numberLen(b[i:]) // JSON's grammar: no "00", "+1" or "1-2"
			if n == 0 {
				return price, size, false
			}
			raw, i = b[i:i+n], i+n
		}
		v, ok := parseFinite(raw)
		if !ok {
			return price, size, false
		}
		switch string(key) {
		case "price":
			if price.Set {
				return price, size, false
			}
			price = Num{V: v, Set: true}
		case "size":
			if size.Set {
				return price, size, false
			}
			size = Num{V: v, Set: true}
		default:
			return price, size, false
		}
		ws()
		if n == 0 {
			if i >= len(b) || b[i] != ',' {
				return price, size, false
			}
			i++
		}
	}
	if i >= len(b) || b[i] != '}' {
		return price, size, false
	}
	i++
	ws()
	return price, size, i == len(b)
}

// CheckLevel checks a level a book or change carries: a price in (0, 1)
// and a size of at least 0.
func CheckLevel(price, size Num) error {
	switch {
	case !price.Set:
		return malformed("price", "a level without a price")
	case !size.Set:
		return malformed("size", "a level without a size")
	// Written so that NaN fails each test (a Parquet column may hold one);
	// an infinite size is no size.
	case !(price.V > 0 && price.V < 1):
		return malformed("price", "level %v × %v: the price is outside (0, 1)", price.V, size.V)
	case !(size.V >= 0) || math.IsInf(size.V, 1):
		return malformed("size", "level %v × %v: the size is outside [0, ∞)", price.V, size.V)
	}
	return nil
}
