package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// Every JSON answer is written without HTML escaping: messages and
// conditions quote "<= 100" and "price_up < 0.35", which json.Marshal
// would write as \u003c. Nothing here is embedded in HTML; the answers
// carry Content-Type application/json and X-Content-Type-Options: nosniff.

// jsonAppender is implemented by response bodies that write their own JSON
// faster than reflection does (snapshot pages are the service's volume).
type jsonAppender interface {
	AppendJSON(dst []byte) []byte
}

// jsonFormat is Huma's JSON format with fast paths for bodies that write
// themselves (io.WriterTo: bytes already encoded) and jsonAppender bodies. The OpenAPI schema still comes from the body's Go type.
var jsonFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		if wt, ok := v.(io.WriterTo); ok {
			_, err := wt.WriteTo(w)
			return err
		}
		if a, ok := v.(jsonAppender); ok {
			_, err := w.Write(a.AppendJSON(make([]byte, 0, 4096)))
			return err
		}
		b, err := marshalJSON(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	},
	Unmarshal: json.Unmarshal,
}

// marshalJSON is json.Marshal without HTML escaping, the one way the api
// encodes a value. An Encoder with SetEscapeHTML(false) is not enough on
// its own: a value whose MarshalJSON calls json.Marshal inside (Huma's
// OpenAPI types do) hands it \u003c already, which unescapeHTML undoes.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return unescapeHTML(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// unescapeHTML rewrites the escapes \u003c, \u003e and \u0026 of valid JSON
// b to the <, > and & they stand for, in place. A backslash in valid JSON
// only ever starts an escape inside a string, so escapes are read pairwise
// from the left: the "u003c" of an escaped backslash followed by that text
// (\\u003c) is left alone.
func unescapeHTML(b []byte) []byte {
	i := bytes.IndexByte(b, '\\')
	if i < 0 {
		return b
	}
	out := b[:i]
	for i < len(b) {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			i++
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			if r, ok := htmlUnescape(b[i+2 : i+6]); ok {
				out = append(out, r)
				i += 6
				continue
			}
		}
		out = append(out, c, b[i+1])
		i += 2
	}
	return out
}

// htmlUnescape is the character of an escape encoding/json writes for
// HTML's sake, given its four hex digits (lower case as it writes them, or
// upper case as other encoders do).
func htmlUnescape(hex []byte) (byte, bool) {
	switch string(hex) {
	case "003c", "003C":
		return '<', true
	case "003e", "003E":
		return '>', true
	case "0026":
		return '&', true
	}
	return 0, false
}

// writeJSON writes v as a JSON response outside Huma (health endpoints).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshalJSON(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"success":false,"error":{"code":"INTERNAL_ERROR","message":"internal server error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
