package store

import (
	"bytes"
	"encoding/json"
)

// SweepResultCut is a sweep's result cut around the elements of its
// trials, so that a store can keep them a row each and read a page of
// them, or the result, a few at a time: Rest[:At], the Trials joined by
// commas and Rest[At:] are the result, byte for byte.
type SweepResultCut struct {
	// Rest is the result without its trials' elements: the trials key's
	// array is [] in it (valid JSON still), At just after its [.
	Rest []byte
	At   int
	// Trials are the array's elements, each with the white space around
	// it as the result has it (TrimJSONSpace takes it off); they share
	// the result's bytes.
	Trials [][]byte
}

// CutSweepResult cuts result, valid JSON (CheckSweepJSON), around the
// elements of the "trials" array of its top-level object, the first such
// key as SweepStore.SweepTrials reads it. ok is false where there are no
// trials to cut out: a result that is not an object, or whose trials are
// missing, null, empty or not an array.
func CutSweepResult(result []byte) (cut SweepResultCut, ok bool) {
	s := jsonScanner{b: result}
	if !s.take('{') {
		return SweepResultCut{}, false
	}
	for first := true; ; first = false {
		if s.take('}') || (!first && !s.take(',')) {
			return SweepResultCut{}, false
		}
		start := s.skipSpace()
		if !s.skip() {
			return SweepResultCut{}, false
		}
		key := result[start:s.i]
		if !s.take(':') {
			return SweepResultCut{}, false
		}
		if !isTrialsKey(key) {
			if !s.skip() {
				return SweepResultCut{}, false
			}
			continue
		}
		if !s.take('[') {
			return SweepResultCut{}, false // null, or not an array
		}
		open := s.i
		var trials [][]byte
		for from := open; ; {
			if len(trials) == 0 && s.take(']') {
				return SweepResultCut{}, false // empty
			}
			if !s.skip() {
				return SweepResultCut{}, false
			}
			s.skipSpace()
			trials = append(trials, result[from:s.i])
			if s.take(']') {
				end := s.i - 1
				rest := make([]byte, 0, open+len(result)-end)
				rest = append(append(rest, result[:open]...), result[end:]...)
				return SweepResultCut{Rest: rest, At: open, Trials: trials}, true
			}
			if !s.take(',') {
				return SweepResultCut{}, false
			}
			from = s.i
		}
	}
}

// isTrialsKey reports whether key, a JSON string, is "trials", however
// escaped.
func isTrialsKey(key []byte) bool {
	if !bytes.ContainsRune(key, '\\') {
		return string(key) == `"trials"`
	}
	var k string
	return json.Unmarshal(key, &k) == nil && k == "trials"
}

// TrimJSONSpace is b without the JSON white space around it.
func TrimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jsonScanner walks JSON known to be valid value by value, without
// decoding the values it skips.
type jsonScanner struct {
	b []byte
	i int
}

// skipSpace moves past white space and returns where s is.
func (s *jsonScanner) skipSpace() int {
	for s.i < len(s.b) && isJSONSpace(s.b[s.i]) {
		s.i++
	}
	return s.i
}

// take moves past c, after white space, if it comes next.
func (s *jsonScanner) take(c byte) bool {
	if s.skipSpace() < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// skip moves past the value that comes next, after white space; false if
// the JSON ends first.
func (s *jsonScanner) skip() bool {
	if s.skipSpace() == len(s.b) {
		return false
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
				return false
			}
			s.i++
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return true // the end of the container around a scalar
			}
			depth--
			s.i++
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return true
			}
			s.i++
		default: // a number, true, false, null
			s.i++
			if depth > 0 {
				continue
			}
			for s.i < len(s.b) && !isJSONDelimiter(s.b[s.i]) {
				s.i++
			}
			return true
		}
		if depth == 0 {
			return true
		}
	}
	return false
}

func isJSONDelimiter(c byte) bool {
	switch c {
	case ',', ':', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
