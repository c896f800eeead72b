package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// TestParseWithFilesStopsAtDashDash: "--" ends the flags of import
// events, as of any Unix command: what follows names files, a name that
// begins with a dash among them, where it was read as flags again.
func TestParseWithFilesStopsAtDashDash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		files  []string
		format string
	}{
		{[]string{"a.jsonl", "--format", "ws-jsonl", "b.jsonl"}, []string{"a.jsonl", "b.jsonl"}, "ws-jsonl"},
		{[]string{"a.jsonl", "--", "b.jsonl", "--format", "pmxt-v2"}, []string{"a.jsonl", "b.jsonl", "--format", "pmxt-v2"}, ""},
		{[]string{"--format", "pmxt-v2", "--", "-dash.jsonl"}, []string{"-dash.jsonl"}, "pmxt-v2"},
		{[]string{"--", "--"}, []string{"--"}, ""},
	} {
		fs := flag.NewFlagSet("import events", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		format := fs.String("format", "", "")
		files, err := parseWithFiles(fs, tc.args)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if !slices.Equal(files, tc.files) || *format != tc.format {
			t.Errorf("%q: files %q, format %q; want %q, %q", tc.args, files, *format, tc.files, tc.format)
		}
	}
}
