package api_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"testing"

	"github.com/updown/updown/store"
)

// TestCompressedRequestBodyIs415: a request body with a Content-Encoding
// the service does not read is 415 UNSUPPORTED_MEDIA_TYPE saying so, with
// Accept-Encoding: identity (RFC 9110), on every POST; before, a gzipped
// replay body was 400 "invalid character '\x1f'" and a plain body labelled
// br was read as if it were plain. An identity body, and a GET carrying
// the header without a body, are answered as ever.
func TestCompressedRequestBodyIs415(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"marketSlug":"btc-updown-15m-1","side":"UP","entryConditions":[{"field":"price_up","operator":"<","value":0.5}],` +
		`"exitConditions":[{"field":"price_up","operator":">","value":0.6}],"positionSize":10}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	send := func(method, path string, payload []byte, encoding string) response {
		t.Helper()
		req, err := http.NewRequest(method, b.srv.URL+path, bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-API-Key", b.keys[store.Pro])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", encoding)
		return sendReq(t, req)
	}
	for _, tc := range []struct {
		name, path, encoding string
		payload              []byte
	}{
		{"gzipped replay", "/v1/replay", "gzip", gz.Bytes()},
		{"plain replay labelled br", "/v1/replay", "br", []byte(body)},
		{"gzipped sweep", "/v1/sweeps", "GZIP", gz.Bytes()},
		{"identity then gzip", "/v1/replay", "identity, gzip", gz.Bytes()},
	} {
		r := send(http.MethodPost, tc.path, tc.payload, tc.encoding)
		e := wantError(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
		if msg, _ := e["message"].(string); !bytes.Contains([]byte(msg), []byte("uncompressed")) {
			t.Errorf("%s: message %q does not say to send the body uncompressed", tc.name, msg)
		}
		if got := r.header.Get("Accept-Encoding"); got != "identity" {
			t.Errorf("%s: Accept-Encoding = %q, want identity", tc.name, got)
		}
	}
	// identity is the body as sent: the replay is read (its market is unknown).
	wantError(t, send(http.MethodPost, "/v1/replay", []byte(body), "identity"), http.StatusNotFound, "MARKET_NOT_FOUND")
	// A GET has no body to decode.
	if r := send(http.MethodGet, "/v1/markets?coin=BTC&limit=1", nil, "gzip"); r.status != http.StatusOK {
		t.Errorf("GET with Content-Encoding and no body: %d %s", r.status, r.body)
	}
}
