package api

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

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
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	},
	Unmarshal: json.Unmarshal,
}

// writeJSON writes v as a JSON response outside Huma (health endpoints).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"success":false,"error":{"code":"INTERNAL_ERROR","message":"internal server error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
