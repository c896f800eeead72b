package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportWebsocketDumpAnswers: `updown import --in dump.jsonl` of a
// raw websocket dump of the market channel (the ws-jsonl archive, a frame
// a line: an initial dump's array of books, or an event) answered
// `json: cannot unmarshal array into Go value of type transfer.jsonLine`
// or `type "" is not market, snapshot, trade or gap`, after opening the
// database; it now gets the command that imports it, as a PMXT hour does,
// before any database is needed. An export's own lines still import.
func TestImportWebsocketDumpAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	frames := map[string]string{
		"array.jsonl":  `[{"event_type":"book","asset_id":"1","market":"0x1","timestamp":"1778584200100","hash":"h","bids":[],"asks":[],"tick_size":"0.01","last_trade_price":""}]`,
		"object.jsonl": `{"market":"0x1","price_changes":[{"asset_id":"1","price":"0.5","side":"BUY","size":"1"}],"event_type":"price_change","timestamp":"1778584200450"}`,
		"dump.gz":      `{"event_type":"last_trade_price","market":"0x1","asset_id":"1","price":"0.51","side":"BUY","size":"10","timestamp":"1778584200800"}`,
	}
	for name, frame := range frames {
		path := filepath.Join(dir, name)
		data := []byte(frame + "\n")
		if strings.HasSuffix(name, ".gz") {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(data)
			zw.Close()
			data = buf.Bytes()
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"import", "--in", path, "--database-url", "postgres://nobody@127.0.0.1:1/none"}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "updown import events --format ws-jsonl") || !strings.Contains(err.Error(), path) {
			t.Errorf("import of a websocket dump %s: %v", name, err)
		}
	}
}
