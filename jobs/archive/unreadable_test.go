package archive_test

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestCompressedNotRead imports dumps compressed in forms the importer
// does not read (zip, bzip2, xz): the error names the file and the form
// and says what to do, where a zip's bytes were reported as a frame on
// line 1 that is not JSON; nothing is written. The markets file says the
// same.
func TestCompressedNotRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFxSet()
	dir := t.TempDir()
	plain := filepath.Join(dir, "dump.jsonl")
	writeJSONL(t, plain, fx.events)
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	w, _ := zw.Create("dump.jsonl")
	w.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"dump.zip":       zbuf.Bytes(),
		"dump.jsonl.bz2": append([]byte("BZh91AY&SY"), data[:200]...),
		"dump.jsonl.xz":  append([]byte{0xfd, '7', 'z', 'X', 'Z', 0}, data[:200]...),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		form := strings.TrimPrefix(filepath.Ext(name), ".")
		form = map[string]string{"bz2": "bzip2"}[form] + map[bool]string{true: form}[form != "bz2"]
		st := memory.New()
		_, err := archive.Import(ctx, st, archive.Options{Format: archive.WSJSONL, Files: []string{path}, Markets: []store.Market{fx.known}, Prices: fx.klines(t)})
		says := func(err error, w string) bool {
			return err != nil && strings.Contains(strings.ReplaceAll(err.Error(), path, ""), w)
		}
		if err == nil || !strings.Contains(err.Error(), path) || !says(err, form) || says(err, "not JSON") {
			t.Errorf("%s: %v, want an error naming the file and %s", name, err, form)
		}
		if ms, _, _ := st.ListMarkets(ctx, store.MarketFilter{}); len(ms) != 0 {
			t.Errorf("%s: %d markets written", name, len(ms))
		}
		if _, _, err := archive.LoadMarkets(path); !says(err, form) {
			t.Errorf("%s as a markets file: %v, want an error naming %s", name, err, form)
		}
	}
}
