package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// A DONE sweep's answer (GET /v1/sweeps/{id}) holds its results, a
// hundred megabytes and more for an ENTERPRISE sweep of ten thousand
// trials: built whole, as Huma builds an answer, it took three times that
// in memory a request (the results read, the answer encoded, its buffer
// grown), and a few concurrent reads of one such sweep could take the api
// past its memory. It is written as it is read instead: the envelope
// around the results, then the results from the store a few trials at a
// time (store.SweepStore.WriteSweepResult), through answerJSON, which
// writes them exactly as the whole answer had them.

// getSweepOutput is GET /v1/sweeps/{id}'s answer: a sweepBody whose
// results, when it has them, are written from the store.
type getSweepOutput struct {
	Body *sweepBody
}

// streamResults is a sweep's results written out to w, as stored.
type streamResults func(w io.Writer) error

// resultsMark stands for the results in the envelope marshalled around
// them: no other results are the JSON number 0.
var resultsMark = json.RawMessage(`0`)

// WriteTo writes the answer: marshalled whole (jsonFormat) unless its
// results are streamed, then the envelope, the results and the rest,
// byte for byte what the whole answer is.
func (b *sweepBody) WriteTo(w io.Writer) (int64, error) {
	whole := *b
	if b.results != nil {
		whole.Data.Results = resultsMark
	}
	env, err := marshalJSON(whole)
	if err != nil {
		return 0, err
	}
	env = append(env, '\n')
	if b.results == nil {
		n, err := w.Write(env)
		return int64(n), err
	}
	// The results are the last field of data, which timestamp follows:
	// the last place they can stand (a request holding the same text
	// stands before them).
	mark := []byte(`,"results":0},"timestamp":`)
	at := bytes.LastIndex(env, mark)
	if at < 0 {
		return 0, fmt.Errorf("sweep answer: no place for the results in %.200q", env)
	}
	at += len(`,"results":`)
	aw := &answerJSON{w: w}
	aw.raw(env[:at])
	if err := b.results(aw); err != nil {
		return aw.n, err
	}
	aw.raw(env[at+len(resultsMark):])
	err = aw.flush()
	return aw.n, err
}

// answerJSON writes valid JSON, given a part at a time, as the api
// encodes a json.RawMessage in an answer (marshalJSON): compact, without
// the white space between its tokens, and with the HTML escapes \u003c,
// \u003e and \u0026 of its strings written as the characters
// (unescapeHTML). It buffers what it writes, up to answerChunk.
type answerJSON struct {
	w        io.Writer
	buf      []byte
	inString bool
	esc      []byte // an escape begun in a string: its backslash and what followed, up to 6 bytes
	n        int64
	err      error
}

// answerChunk is how much answerJSON holds before it writes.
const answerChunk = 64 << 10

func (a *answerJSON) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	buf := a.buf
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case len(a.esc) > 0:
			a.esc = append(a.esc, c)
			switch {
			case len(a.esc) == 2 && c != 'u':
				buf = append(buf, a.esc...)
				a.esc = a.esc[:0]
			case len(a.esc) == 6:
				if r, ok := htmlUnescape(a.esc[2:]); ok {
					buf = append(buf, r)
				} else {
					buf = append(buf, a.esc...)
				}
				a.esc = a.esc[:0]
			}
		case a.inString:
			// The run up to the next quote or backslash as it is.
			j := i
			for j < len(p) && p[j] != '"' && p[j] != '\\' {
				j++
			}
			buf = append(buf, p[i:j]...)
			if j == len(p) {
				i = j
				break
			}
			if p[j] == '\\' {
				a.esc = append(a.esc[:0], '\\')
			} else {
				buf = append(buf, '"')
				a.inString = false
			}
			i = j
		default:
			switch c {
			case ' ', '\t', '\n', '\r':
				continue
			case '"':
				a.inString = true
			}
			buf = append(buf, c)
		}
		if len(buf) >= answerChunk {
			a.buf = buf
			if err := a.flush(); err != nil {
				return i, err
			}
			buf = a.buf
		}
	}
	a.buf = buf
	return len(p), nil
}

// raw writes b as it is (the envelope, encoded already).
func (a *answerJSON) raw(b []byte) {
	a.buf = append(a.buf, b...)
}

// flush writes what a holds.
func (a *answerJSON) flush() error {
	if a.err != nil {
		return a.err
	}
	if len(a.buf) > 0 {
		n, err := a.w.Write(a.buf)
		a.n += int64(n)
		a.buf = a.buf[:0]
		a.err = err
	}
	return a.err
}
