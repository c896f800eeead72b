package api

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs/jsonenc"
	"github.com/updown/updown/jobs/transfer"
)

// csvWriter is a response body with a CSV form, served on Accept: text/csv.
type csvWriter interface {
	WriteCSV(w io.Writer) error
}

// csvFormat writes CSV bodies. withCSVNegotiation keeps text/csv to the
// routes whose bodies have a CSV form, so Marshal never meets another.
var csvFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		if c, ok := v.(csvWriter); ok {
			return c.WriteCSV(w)
		}
		return fmt.Errorf("api: %T has no CSV form", v)
	},
	Unmarshal: func([]byte, any) error { return errors.New("request bodies are JSON, not CSV") },
}

// csvRoute reports whether the path's answer has a CSV form: snapshot and
// trade pages, exchange depth history and a sweep's trials.
func csvRoute(path string) bool {
	switch path {
	case "/v1/btc/spot/snapshots", "/v1/btc/future/snapshots":
		return true
	}
	if strings.HasPrefix(path, "/v1/sweeps/") && strings.HasSuffix(path, "/trials") { // a sweep's trials (sweeps.go)
		return true
	}
	return strings.HasPrefix(path, "/v1/markets/") && (strings.HasSuffix(path, "/snapshots") || strings.HasSuffix(path, "/trades"))
}

// withCSVNegotiation answers JSON to a client that accepts CSV on a route
// without a CSV form, rather than letting Huma pick a format the body
// cannot take. On a route with rows it settles the format itself
// (negotiateFormat) and hands Huma that one type: Huma's parser takes the
// q of the last type in Accept as 1 (and a q=0 as 1), so "text/csv,
// application/json;q=0.5" was answered JSON.
//
// A word in Accept that is no media type (csv, json, parquet: Huma's
// short format keys) is dropped first, so that it is answered as any other
// Accept the API has no form for, in the default JSON: Huma took it for
// a format and wrote it back as the Content-Type ("Content-Type: csv").
func withCSVNegotiation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Media types are case-insensitive (RFC 9110 8.3.1): Text/CSV is
		// text/csv.
		// Accept over several header lines is one list (RFC 9110 5.3),
		// where Huma reads the first line alone.
		lines := r.Header.Values("Accept")
		accept := strings.ToLower(strings.Join(lines, ", "))
		if ranges, cut := mediaRanges(accept); cut || len(lines) > 1 {
			accept = ranges
			if accept == "" {
				r.Header.Del("Accept")
			} else {
				r.Header.Set("Accept", accept)
			}
		}
		if strings.Contains(accept, "csv") || strings.Contains(accept, "parquet") {
			ct := "application/json"
			if csvRoute(r.URL.Path) {
				if picked := negotiateFormat(accept); picked != "" {
					ct = picked
				}
			}
			r.Header.Set("Accept", ct)
		}
		next.ServeHTTP(w, r)
	})
}

// mediaRanges returns the elements of accept that are media ranges
// (type/subtype, with their parameters), and whether it dropped any other.
func mediaRanges(accept string) (string, bool) {
	if accept == "" {
		return "", false
	}
	kept, cut := make([]string, 0, 4), false
	for elem := range strings.SplitSeq(accept, ",") {
		name, _, _ := strings.Cut(elem, ";")
		if strings.Contains(name, "/") {
			kept = append(kept, strings.TrimSpace(elem))
		} else if strings.TrimSpace(name) != "" {
			cut = true
		}
	}
	return strings.Join(kept, ", "), cut
}

// formatKeys are the media types of the API's formats (server.go), the
// default first; their short keys never reach negotiation
// (withCSVNegotiation).
var formatKeys = []string{"application/json", "text/csv", transfer.ParquetMediaType}

// negotiateFormat returns the format key that accept weighs highest, ""
// when it names none with a q above 0. On a tie the default (JSON) wins,
// else the type named first, as Huma decides.
func negotiateFormat(accept string) string {
	best, bestQ := "", 0.0
	for elem := range strings.SplitSeq(accept, ",") {
		name, params, _ := strings.Cut(elem, ";")
		name = strings.TrimSpace(name)
		if !slices.Contains(formatKeys, name) {
			continue
		}
		q := qValue(params)
		if q > bestQ || (q > 0 && q == bestQ && name == formatKeys[0]) {
			best, bestQ = name, q
		}
	}
	return best
}

// rowsForm reports whether the answer to this Accept header is CSV, and
// whether Parquet, by the very negotiation Huma runs to pick the response
// format, run once: the page cache, which holds JSON, must never stand in
// for an answer Huma then writes in another format.
func (s *Server) rowsForm(accept string) (csv, parquet bool) {
	ct, err := s.api.Negotiate(accept)
	if err != nil {
		return false, false
	}
	return csvFormats[ct], parquetFormats[ct]
}

// wantsRows reports whether accept negotiates a form of rows alone, CSV or
// Parquet, whose body has no place for a page's other fields.
func (s *Server) wantsRows(accept string) bool {
	csv, parquet := s.rowsForm(accept)
	return csv || parquet
}

// PageHeaders carry a page's fields besides its rows on its CSV and
// Parquet forms, whose bodies have no place for them: a walk by cursor
// goes on from X-Next-Cursor, and a window's cut is said.
type PageHeaders struct {
	NextCursor string `header:"X-Next-Cursor" doc:"CSV and Parquet answers: the page's next_cursor; absent after the last page."`
	Total      string `header:"X-Total-Count" doc:"CSV and Parquet answers: the page's total."`
	Matched    string `header:"X-Matched-Count" doc:"CSV and Parquet answers: the page's matched, where the JSON answer has one."`
	Warning    string `header:"X-Warning" doc:"CSV and Parquet answers: the page's warning, where the JSON answer has one."`
}

// rowsPageHeaders are the headers of a page of rows: its cursor (nil
// after the last page), total, matched (negative: none) and warning.
func rowsPageHeaders(next *string, total, matched int, warning string) PageHeaders {
	h := PageHeaders{Total: strconv.Itoa(total), Warning: warning}
	if next != nil {
		h.NextCursor = *next
	}
	if matched >= 0 {
		h.Matched = strconv.Itoa(matched)
	}
	return h
}

// csvFormats and parquetFormats are the format keys (server.go) that write
// CSV and Parquet.
var (
	csvFormats     = map[string]bool{"text/csv": true, "csv": true}
	parquetFormats = map[string]bool{transfer.ParquetMediaType: true, "parquet": true}
)

// ContentType keeps errors JSON whatever format was negotiated.
func (e *Error) ContentType(string) string { return "application/json" }

// WriteCSV writes the page in the export's CSV form (updown export
// --format csv): one snapshot a line, each book in a cell as "bids|asks",
// price:size levels parted by spaces (transfer.CSV).
func (p *snapshotPageBody) WriteCSV(w io.Writer) error {
	if p.encoded != nil {
		// A page served from the cache is JSON bytes only: writing its
		// (empty) snapshots as CSV would answer a header and nothing else.
		return errors.New("api: a cached JSON page has no CSV form")
	}
	enc, err := transfer.NewEncoder(w, transfer.CSV, transfer.Snapshots)
	if err != nil {
		return err
	}
	for i := range p.Snapshots {
		if err := enc.Encode(transfer.Record{Slug: p.Market.Slug, Snapshot: &p.Snapshots[i]}); err != nil {
			return err
		}
	}
	return enc.Flush()
}

// WriteCSV writes depth history one snapshot a line, levels as JSON.
func (p *depthPageBody) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"symbol", "time_epoch_ms", "coin_price", "bids", "asks", "last_update_id"}); err != nil {
		return err
	}
	for i := range p.Data {
		d := &p.Data[i]
		row := []string{
			d.Symbol,
			strconv.FormatInt(d.Time.UnixMilli(), 10),
			string(jsonenc.AppendFloat(nil, d.CoinPrice)),
			string(appendDepthLevels(nil, d.Bids, false)),
			string(appendDepthLevels(nil, d.Asks, false)),
			strconv.FormatInt(d.LastUpdateID, 10),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
