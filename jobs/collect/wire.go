package collect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/updown/updown/jobs/book"
)

// The upstreams send numbers as strings ("0.52"), lists as JSON encoded
// into a string ("[\"Up\", \"Down\"]"), ids as strings or numbers, and
// leave fields out. These types accept every form seen, so that a shape
// change upstream costs a log line, not the collector.

// The market channel's and the CLOB's number and id forms are the book
// package's, which the archive importer shares (DESIGN 2).
type (
	flexString = book.Text
	flexFloat  = book.Num
	flexBool   = book.Bool
)

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
func parseNum(s string) (float64, error) { return book.ParseNum(s) }

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
var errMalformed = book.ErrMalformed
