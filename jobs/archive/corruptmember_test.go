package archive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestCorruptMemberMidFile imports gzip and zstd dumps of three members
// (frames), the second of which has two bytes changed, as a bad disk or
// download leaves it, the third whole after it. Each is an error naming
// the file, the line, that the stream is corrupt and near which byte of
// the file (inside the bad member), nothing written, where a zstd member
// that failed mid-way was reported as the file ending before its data
// did (a download cut short), with the file whole after it, and no error
// said where in the file the damage was.
func TestCorruptMemberMidFile(t *testing.T) {
	t.Parallel()
	fx := newFxSet()
	dir := t.TempDir()
	byteRe := regexp.MustCompile(`near byte (\d+) of the file`)
	for _, kind := range []string{"gzip", "zstd"} {
		for n := 1; n <= 6; n++ {
			var buf bytes.Buffer
			var ends []int
			for m := range 3 {
				var zw interface {
					Write([]byte) (int, error)
					Close() error
				}
				if kind == "gzip" {
					zw = gzip.NewWriter(&buf)
				} else {
					w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
					if err != nil {
						t.Fatal(err)
					}
					zw = w
				}
				// Members of some hundred kilobytes: zstd's blocks (128
				// KiB) are several a member.
				var lines []byte
				for i := range 20000 {
					ts := fx.known.StartTime.UnixMilli() + int64(m*20000+i)*10
					lines = fmt.Appendf(lines, `{"event_type":"price_change","market":%q,"timestamp":"%d","price_changes":[{"asset_id":%q,"price":"0.%d","size":"%d","side":"BUY"}]}`+"\n",
						fx.known.ConditionID, ts, fx.known.ClobTokenUp, i%90+10, i+1)
				}
				zw.Write(lines)
				if err := zw.Close(); err != nil {
					t.Fatal(err)
				}
				ends = append(ends, buf.Len())
			}
			b := buf.Bytes()
			at := ends[0] + (ends[1]-ends[0])*n/8
			b[at] ^= 0xff
			b[at+1] ^= 0x55
			path := filepath.Join(dir, fmt.Sprintf("dump-%d.jsonl.%s", n, kind))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			st := memory.New()
			_, err := archive.Import(context.Background(), st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
			if err == nil {
				t.Errorf("%s, bytes %d-%d changed: no error", filepath.Base(path), at, at+1)
				continue
			}
			msg := err.Error()
			for _, w := range []string{path + ": line ", kind, "corrupt"} {
				if !bytes.Contains([]byte(msg), []byte(w)) {
					t.Errorf("%s, bytes %d-%d changed: %v, want an error saying %q", filepath.Base(path), at, at+1, err, w)
				}
			}
			if bytes.Contains([]byte(msg), []byte("the file ends")) {
				t.Errorf("%s, bytes %d-%d changed (of %d, a whole member after them): %v, says the file ends early", filepath.Base(path), at, at+1, len(b), err)
			}
			if m := byteRe.FindStringSubmatch(msg); m == nil {
				t.Errorf("%s, bytes %d-%d changed: %v, want the byte it failed near", filepath.Base(path), at, at+1, err)
			} else if off, _ := strconv.Atoi(m[1]); off < ends[0] || off > ends[1] {
				t.Errorf("%s, bytes %d-%d changed: failed near byte %d, outside the bad member (%d-%d)", filepath.Base(path), at, at+1, off, ends[0], ends[1])
			}
			if _, n, _ := st.ListMarkets(context.Background(), store.MarketFilter{}); n != 0 {
				t.Errorf("%s: a failed import stored %d markets", filepath.Base(path), n)
			}
		}
	}
}
