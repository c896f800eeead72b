package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/updown/updown/store/postgres"
)

// runDropSnapshots is `updown drop-snapshots --before YYYY-MM`: the
// snapshots of the months before one, dropped with their partitions, each
// market's count made afresh from what is left.
func runDropSnapshots(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("drop-snapshots", flag.ContinueOnError)
	fs.SetOutput(stderr)
	before := fs.String("before", "", "the first `YYYY-MM` (UTC) kept: every month before it is dropped; at most the current month")
	dryRun := fs.Bool("dry-run", false, "drop nothing: say what would be dropped")
	fs.Usage = commandUsage(fs, "updown drop-snapshots --before YYYY-MM [--dry-run]\n\n"+
		"Drops the snapshots of every month before YYYY-MM: their monthly partitions of snapshot chunks go whole, in one\n"+
		"transaction that counts each market's snapshots afresh from what is left, so that every market lists, counts and\n"+
		"replays what it has. A market that ran across the month's start keeps its later snapshots; one wholly before it has\n"+
		"none (the market, its trades and gaps are kept). The month being recorded is never dropped. Readers and writers\n"+
		"of snapshots wait for it (a moment; it tries again while an import holds the tables). Dropping a partition by hand\n"+
		"(DROP TABLE) leaves the counts wrong: use this.", adminEnv)
	var month time.Time
	st, err := adminStore(ctx, fs, args, func() (err error) {
		month, err = parseMonth(*before)
		return err
	})
	if err != nil {
		return err
	}
	defer st.Close()
	d, err := st.DropSnapshotsBefore(ctx, month, *dryRun)
	if err != nil {
		return fmt.Errorf("drop-snapshots: %w", err)
	}
	fmt.Fprintln(stdout, dropSummary(d, month, *dryRun))
	return nil
}

// parseMonth parses --before: a calendar month, YYYY-MM, no later than the
// current one (UTC).
func parseMonth(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("drop-snapshots: --before YYYY-MM is required: the first month kept")
	}
	m, err := time.Parse("2006-01", strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("drop-snapshots: --before %q: want a month as YYYY-MM, such as 2025-01", s)
	}
	now := time.Now().UTC()
	if current := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC); m.After(current) {
		return time.Time{}, fmt.Errorf("drop-snapshots: --before %s would drop the current month, %s, which is being recorded: the latest is --before %s",
			m.Format("2006-01"), current.Format("2006-01"), current.Format("2006-01"))
	}
	return m, nil
}

// dropSummary is the line drop-snapshots ends with: what it dropped, or
// would drop.
func dropSummary(d postgres.Dropped, before time.Time, dryRun bool) string {
	month := before.Format("2006-01")
	if d.Snapshots == 0 && len(d.Partitions) == 0 && d.Markets == 0 {
		return fmt.Sprintf("drop-snapshots: nothing stored before %s", month)
	}
	verb := "dropped"
	if dryRun {
		verb = "would drop (dry run: nothing dropped)"
	}
	parts := "no partition"
	if len(d.Partitions) > 0 {
		parts = "partitions " + strings.Join(d.Partitions, ", ")
	}
	line := fmt.Sprintf("drop-snapshots: %s %d snapshots of %d markets before %s (%s); %d markets left with none",
		verb, d.Snapshots, d.Markets, month, parts, d.Emptied)
	if d.Kept > 0 {
		line += fmt.Sprintf("; %d snapshots of %s or later, held by chunks begun before it, kept", d.Kept, month)
	}
	return line
}
