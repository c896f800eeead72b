package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// LoadMarkets reads a markets file (--markets): Gamma's JSON as `updown
// markets fetch` saves it (read by the collector's rules,
// collect.MarketsFromGamma), or an export of ours in JSON Lines, CSV or
// Parquet (`updown export --what markets`, the markets file of --split).
// It returns the markets and the file's digest.
func LoadMarkets(name string) ([]store.Market, string, error) {
	r, closeFn, err := openFile(name, nil)
	if err != nil {
		return nil, "", err
	}
	defer closeFn()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, "", &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("read: %w", err)}
	}
	sum := sha256.Sum256(data)
	digest := "markets:" + hex.EncodeToString(sum[:8])
	if bytes.HasPrefix(data, []byte("PAR1")) {
		// markets.parquet of `updown export --format parquet`.
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, "", &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("not a readable Parquet file: %w", err)}
		}
		if parquetKindOf(pf) != ParquetMarkets {
			return nil, "", &InputError{Pos: Pos{File: name}, Err: errors.New("a Parquet file, but not an updown markets export (`updown export --what markets --format parquet`)")}
		}
		r := parquet.NewGenericReader[transfer.ParquetMarket](pf) // the footer read once, by OpenFile
		defer r.Close()
		rows := make([]transfer.ParquetMarket, r.NumRows())
		if n, err := r.Read(rows); err != nil && !errors.Is(err, io.EOF) || n != len(rows) {
			return nil, "", &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("read Parquet markets: %d of %d rows: %w", n, len(rows), err)}
		}
		out := make([]store.Market, len(rows))
		for i := range rows {
			out[i] = marketOfRow(&rows[i])
			// Checked as the markets of a JSON Lines or CSV file are.
			if err := transfer.Check(&transfer.Record{Market: &out[i]}); err != nil {
				return nil, "", &InputError{Pos: Pos{File: name, Row: int64(i) + 1}, Err: err}
			}
		}
		return out, digest, nil
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		ms, _, err := collect.MarketsFromGamma(trimmed, nil)
		if err != nil {
			return nil, "", &InputError{Pos: Pos{File: name}, Err: err}
		}
		return ms, digest, nil
	}
	dec, err := transfer.NewDecoder(bytes.NewReader(data), "")
	if err != nil {
		return nil, "", &InputError{Pos: Pos{File: name}, Err: err}
	}
	var out []store.Market
	for {
		rec, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("not Gamma's JSON nor an updown markets export: %w", err)}
		}
		if rec.Market != nil {
			out = append(out, *rec.Market)
		}
	}
	return out, digest, nil
}
