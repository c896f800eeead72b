package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// LoadMarkets reads a markets file (--markets): Gamma's JSON as `updown
// markets fetch` saves it (read by the collector's rules,
// collect.MarketsFromGamma), or an export of ours in JSON Lines or CSV
// (`updown export --what markets`). It returns the markets and the file's
// digest.
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
