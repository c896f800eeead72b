package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestImportStdinMustCarryAnExport: import without --in reads stdin, which
// must be piped or redirected and not empty; a terminal (or another
// device) or no bytes at all is a forgotten --in, refused before anything
// is imported.
func TestImportStdinMustCarryAnExport(t *testing.T) {
	t.Parallel()
	pipe := func(t *testing.T, data string) *os.File {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		go func() { _, _ = io.WriteString(w, data); w.Close() }()
		return r
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, "{\"market\":{}}\n")
	_ = zw.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name  string
		stdin func(t *testing.T) *os.File
		want  string // in the error; "" when the input is accepted, and its content
		read  string
	}{
		{"device", func(*testing.T) *os.File { return devNull }, "stdin is a terminal (or another device)", ""},
		{"empty pipe", func(t *testing.T) *os.File { return pipe(t, "") }, "read nothing from stdin", ""},
		{"export", func(t *testing.T) *os.File { return pipe(t, "{\"market\":{}}\n") }, "", "{\"market\":{}}\n"},
		{"gzipped export", func(t *testing.T) *os.File { return pipe(t, gz.String()) }, "", "{\"market\":{}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, closeIn, err := openIn("-", tc.stdin(t))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--in FILE") {
					t.Fatalf("openIn: %v; want an error saying %q and naming --in FILE", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer closeIn()
			if got, err := io.ReadAll(r); err != nil || string(got) != tc.read {
				t.Fatalf("read %q, %v; want %q", got, err, tc.read)
			}
		})
	}
}

// TestImportCommandStdin runs the binary: without --in and with nothing on
// stdin it fails and names --in; an export piped in is imported.
func TestImportCommandStdin(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	importWith := func(stdin io.Reader) (int, string, string) {
		cmd := exec.Command(updownBinary(t), "import")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+db)
		cmd.Stdin = stdin
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode(), out.String(), errOut.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String(), errOut.String()
	}
	for name, stdin := range map[string]io.Reader{"no stdin (/dev/null)": nil, "an empty pipe": strings.NewReader("")} {
		if code, stdout, stderr := importWith(stdin); code == 0 || !strings.Contains(stderr, "--in FILE") {
			t.Errorf("import with %s: exit %d, want non-zero and a message naming --in FILE\n%s%s", name, code, stdout, stderr)
		}
	}
	g, err := gen.New(gen.DefaultConfig(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.Market(store.BTC, store.M5, time.Now().Add(-time.Hour).Truncate(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	enc, err := transfer.NewEncoder(&export, transfer.JSONL, transfer.All)
	if err == nil {
		err = enc.Encode(transfer.Record{Market: &m})
	}
	if err == nil {
		err = enc.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := importWith(&export)
	var summary map[string]float64
	if code != 0 || json.Unmarshal([]byte(stdout), &summary) != nil || summary["markets"] != 1 {
		t.Fatalf("import of a piped export: exit %d\n%s%s", code, stdout, stderr)
	}
}
