package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestParseFlagsRecordsWhatTheFlagPackageDrops: parseFlags refuses a flag
// given twice and hints at a value the shell split from what the parse
// gave the flags, keeps the values parsed, and its -h and mistyped-flag
// usage show the flags' own types and defaults (the recording is not
// seen), with a usage of the command's own or the flag package's.
func TestParseFlagsRecordsWhatTheFlagPackageDrops(t *testing.T) {
	t.Parallel()
	newSet := func(usage bool) (*flag.FlagSet, *bytes.Buffer, *string, *int, *bool) {
		var out bytes.Buffer
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.SetOutput(&out)
		s := fs.String("out", "-", "a `file`")
		n := fs.Int("batch", 0, "a count")
		b := fs.Bool("books", true, "a switch")
		fs.Func("slug", "repeatable", func(string) error { return nil })
		if usage {
			fs.Usage = commandUsage(fs, "cmd [flags]", nil)
		}
		return fs, &out, s, n, b
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", "a", "-out=b"}, `cmd: --out is given twice ("a", then "b"): give it once`},
		{[]string{"--books", "--batch", "1", "--books=false"}, `cmd: --books is given twice ("true", then "false"): give it once`},
		{[]string{"--out", "my", "data.jsonl"}, `; if --out's value has spaces, quote it whole: --out 'my data.jsonl'`},
		{[]string{"--out=my", "big", "data.jsonl", "--batch", "2"}, `; if --out's value has spaces, quote it whole: --out 'my big data.jsonl'`},
		{[]string{"--books", "stray"}, `unexpected argument "stray": it takes flags only (see updown cmd -h)`},
		{[]string{"--out", "x", "--", "stray"}, `unexpected argument "stray": it takes flags only (see updown cmd -h)`},
	} {
		fs, _, _, _, _ := newSet(true)
		err := parseFlags(fs, c.args)
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("parseFlags(%q): %v; want it to end %q", c.args, err, c.want)
		}
	}
	fs, _, s, n, b := newSet(true)
	if err := parseFlags(fs, []string{"--slug", "a", "--out", "x.jsonl", "--slug=b", "-batch=3", "--books=false"}); err != nil {
		t.Fatalf("a repeatable flag given twice: %v", err)
	}
	if *s != "x.jsonl" || *n != 3 || *b {
		t.Errorf("parsed --out %q --batch %d --books %v, want x.jsonl, 3, false", *s, *n, *b)
	}
	if _, ok := fs.Lookup("out").Value.(*recordingValue); ok {
		t.Error("--out's value is still recorded after the parse")
	}
	for _, usage := range []bool{true, false} {
		plain, plainOut, _, _, _ := newSet(usage)
		plain.Usage()
		want := plainOut.String()
		for _, args := range [][]string{{"-h"}, {"--bogus"}} {
			fs, out, _, _, _ := newSet(usage)
			err := parseFlags(fs, args)
			if args[0] == "-h" && !errors.Is(err, flag.ErrHelp) || args[0] != "-h" && err == nil {
				t.Errorf("parseFlags(%q): %v", args, err)
			}
			if got := out.String(); !strings.HasSuffix(got, want) || !strings.Contains(got, "-batch int") {
				t.Errorf("parseFlags(%q) with its own usage %v printed\n%s\nwant the usage\n%s", args, usage, got, want)
			}
		}
	}
}
