package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportBinaryFileIsToldShortly: a binary file given to import (a
// zip, a zstd dump) is refused as binary data in one short line, where it was read as a CSV file and the error
// quoted its first "line", kilobytes of escaped bytes.
func TestImportBinaryFileIsToldShortly(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "dump.zip")
	data := append([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), bytes.Repeat([]byte{0, 1, 2, 0xff, 'a'}, 2000)...)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"import", "--in", name, "--database-url", pgtest.NewDatabase(t)}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "holds binary data") || len(err.Error()) > 400 {
		t.Fatalf("import of a binary file: %v (%d bytes); want a short refusal saying it holds binary data", err, len(err.Error()))
	}
}
