package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
)

// TrialsPage decodes the trials offset to offset+limit (fewer at the end)
// of a sweep's stored results, Results as JSON, and counts them all
// (GET /v1/sweeps/{id}/trials). The trials outside the page are skipped
// over, not decoded: the results of an ENTERPRISE sweep of 10,000 trials
// are a hundred megabytes or more, and decoding them all for every page of
// a hundred cost a second and twice their size in memory, a page at a
// time, for as many pages as the customer read.
func TrialsPage(results []byte, offset, limit int) (page []TrialResult, total int, err error) {
	if offset < 0 || limit < 0 {
		return nil, 0, fmt.Errorf("sweep results: a page at offset %d of %d trials", offset, limit)
	}
	s := scanner{b: results}
	if !s.take('{') {
		return nil, 0, s.bad("not an object")
	}
	page = []TrialResult{}
	found := false
	for first := true; ; first = false {
		if s.take('}') {
			break
		}
		if !first && !s.take(',') {
			return nil, 0, s.bad("want , or }")
		}
		start := s.skipSpace()
		if err := s.skip(); err != nil {
			return nil, 0, err
		}
		var key string
		if err := json.Unmarshal(s.b[start:s.i], &key); err != nil {
			return nil, 0, s.bad("want a key")
		}
		if !s.take(':') {
			return nil, 0, s.bad("want :")
		}
		if key != "trials" || found {
			if err := s.skip(); err != nil {
				return nil, 0, err
			}
			continue
		}
		found = true
		if start := s.skipSpace(); start < len(s.b) && s.b[start] == 'n' { // null: no trials
			if err := s.skip(); err != nil || string(s.b[start:s.i]) != "null" {
				return nil, 0, s.bad("trials: not an array")
			}
			continue
		}
		if !s.take('[') {
			return nil, 0, s.bad("trials: not an array")
		}
		for k := 0; ; k++ {
			if s.take(']') {
				break
			}
			if k > 0 && !s.take(',') {
				return nil, 0, s.bad("trials: want , or ]")
			}
			start := s.skipSpace()
			if err := s.skip(); err != nil {
				return nil, 0, err
			}
			total++
			if k >= offset && k-offset < limit {
				var tr TrialResult
				if err := json.Unmarshal(s.b[start:s.i], &tr); err != nil {
					return nil, 0, fmt.Errorf("sweep results: trial %d: %w", k, err)
				}
				page = append(page, tr)
			}
		}
	}
	if s.skipSpace() != len(s.b) {
		return nil, 0, s.bad("data after the object")
	}
	return page, total, nil
}

// scanner walks JSON known to be valid (the store keeps only valid JSON)
// value by value, without decoding the values it skips.
type scanner struct {
	b []byte
	i int
}

var errTruncated = errors.New("truncated")

func (s *scanner) bad(why string) error {
	return fmt.Errorf("sweep results: at byte %d: %s", s.i, why)
}

// skipSpace moves past white space and returns where s is.
func (s *scanner) skipSpace() int {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.i
		}
	}
	return s.i
}

// take moves past c, after white space, if it comes next.
func (s *scanner) take(c byte) bool {
	if s.skipSpace() < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// skip moves past the value that comes next.
func (s *scanner) skip() error {
	if s.skipSpace() == len(s.b) {
		return s.bad("want a value")
	}
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			if s.i >= len(s.b) {
				return fmt.Errorf("sweep results: %w", errTruncated)
			}
			s.i++
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return nil // the end of the container around a scalar
			}
			depth--
			s.i++
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return nil
			}
			s.i++
		default: // a number, true, false, null
			s.i++
			if depth > 0 {
				continue
			}
			for s.i < len(s.b) && !isDelimiter(s.b[s.i]) {
				s.i++
			}
			return nil
		}
		if depth == 0 {
			return nil
		}
	}
	return fmt.Errorf("sweep results: %w", errTruncated)
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', ':', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
