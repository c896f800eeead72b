package transfer

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestCreatedByString: the linked version first, then the module's, then
// the VCS revision (with -dirty for a modified tree), then "devel"; never
// the empty "version (build )" that go run used to write (issue 25).
func TestCreatedByString(t *testing.T) {
	t.Parallel()
	const rev = "1eddd13abcdef0123456789abcdef0123456789a"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	devel := debug.Module{Path: "github.com/updown/updown", Version: "(devel)"}
	tagged := debug.Module{Path: "github.com/updown/updown", Version: "v1.4.0"}
	for _, tc := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"linked", "v1.2.3", &debug.BuildInfo{Main: devel, Settings: vcs("false")}, "updown version v1.2.3 (build 1eddd13abcde)"},
		{"linked, no build info", "v1.2.3", nil, "updown version v1.2.3"},
		{"module version", "", &debug.BuildInfo{Main: tagged}, "updown version v1.4.0"},
		{"revision", "", &debug.BuildInfo{Main: devel, Settings: vcs("false")}, "updown version 1eddd13abcde"},
		{"dirty revision", "", &debug.BuildInfo{Main: devel, Settings: vcs("true")}, "updown version 1eddd13abcde-dirty"},
		{"go run without VCS", "", &debug.BuildInfo{Main: devel}, "updown version devel"},
		{"no build info", "", nil, "updown version devel"},
	} {
		if got := createdByString(tc.linked, tc.info); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestParquetCreatedBy: a written file's footer names this build.
func TestParquetCreatedBy(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	pw := NewParquetWriter[ParquetGap](&buf)
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	got := f.Metadata().CreatedBy
	if want := createdByString(version, info); got != want || strings.Contains(got, "(build )") || strings.HasSuffix(got, "version ") {
		t.Errorf("created_by %q, want %q", got, want)
	}
}
