package transfer

import (
	"runtime/debug"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// version is the release being built, set by the linker as main.version
// is: go build -ldflags "-X github.com/updown/updown/jobs/transfer.version=v1.2.3".
// When it is empty (go run, go build without it) the Go build info names
// the version (buildVersion).
var version string

// createdBy is the created_by of every Parquet file written: "updown
// version v1.2.3", with "(build <revision>)" when the build knows its
// commit. Work it out once: the build info does not change.
var createdBy = sync.OnceValue(func() parquet.WriterOption {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return createdByOption(createdByString(version, info))
})

// createdByOption sets the footer's created_by as it is; parquet.CreatedBy
// would write "version v1.2.3(build )" around empty parts.
type createdByOption string

func (c createdByOption) ConfigureWriter(cfg *parquet.WriterConfig) { cfg.CreatedBy = string(c) }

// createdByString is created_by for the linked version (may be empty) and
// the build info (nil when there is none).
func createdByString(linked string, info *debug.BuildInfo) string {
	v, rev := buildVersion(linked, info)
	s := "updown version " + v
	if rev != "" && rev != v {
		s += " (build " + rev + ")"
	}
	return s
}

// buildVersion is the release: the linked version, else the main module's
// version from the build info (a go install of a tagged module, or the
// pseudo-version the go command stamps), else the VCS revision, else
// "devel". rev is the VCS revision, 12 digits, with "-dirty" when the tree
// was modified; empty when the build did not record it.
func buildVersion(linked string, info *debug.BuildInfo) (v, rev string) {
	if info != nil {
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value[:min(12, len(s.Value))]
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && modified {
			rev += "-dirty"
		}
	}
	switch {
	case linked != "":
		return linked, rev
	case info != nil && info.Main.Version != "" && info.Main.Version != "(devel)":
		return info.Main.Version, rev
	case rev != "":
		return rev, rev
	}
	return "devel", rev
}
