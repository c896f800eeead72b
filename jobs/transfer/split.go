package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/updown/updown/store"
)

// Split says how ExportSplit cuts the snapshots into files.
type Split string

// Splits.
const (
	// SplitMarket writes a snapshots file per market, named by its slug.
	SplitMarket Split = "market"
	// SplitDay writes a snapshots file per UTC day of the markets' start
	// (2026-04-29), so a market's snapshots stay in one file.
	SplitDay Split = "day"
)

// Create opens a file of a split export by its name relative to the
// export's root ("markets", "snapshots/<key>"; the caller adds the
// extension). Closing it completes the file.
type Create func(name string) (io.WriteCloser, error)

// ExportSplit writes the markets opt.Filter selects to the file "markets"
// and their snapshots to a file "snapshots/<key>" per market or per day,
// all in opt.Format (each file holds one kind of record, so JSON Lines
// files hold markets or snapshots too). Like Export it streams: one page of
// snapshots and one file's buffer are held at a time.
func ExportSplit(ctx context.Context, src Source, create Create, split Split, opt ExportOptions) (st Stats, err error) {
	if split != SplitMarket && split != SplitDay {
		return st, fmt.Errorf("transfer: unknown split %q (want market or day)", split)
	}
	opt = exportDefaults(opt)
	newEncoder := func(w io.Writer, what What) (Encoder, error) {
		if opt.Format == Parquet {
			return NewParquetEncoder(w, what, opt.Books)
		}
		return NewEncoder(w, opt.Format, what)
	}
	mf, err := create("markets")
	if err != nil {
		return st, err
	}
	markets, err := newEncoder(mf, Markets)
	if err != nil {
		return st, errors.Join(err, mf.Close())
	}
	var (
		key   string
		file  io.WriteCloser
		snaps Encoder
	)
	closeSnaps := func() error {
		if file == nil {
			return nil
		}
		err := errors.Join(snaps.Flush(), file.Close())
		file, snaps = nil, nil
		return err
	}
	defer func() {
		err = errors.Join(err, closeSnaps())
		if mf != nil {
			err = errors.Join(err, markets.Flush(), mf.Close())
		}
	}()
	err = eachMarket(ctx, src, opt, func(m *store.Market) error {
		if err := markets.Encode(Record{Market: m}); err != nil {
			return err
		}
		st.Markets++
		k := m.Slug
		if split == SplitDay {
			k = m.StartTime.UTC().Format("2006-01-02")
		}
		if file == nil || k != key {
			if err := closeSnaps(); err != nil {
				return err
			}
			f, err := create("snapshots/" + k)
			if err != nil {
				return err
			}
			if snaps, err = newEncoder(f, Snapshots); err != nil {
				return errors.Join(err, f.Close())
			}
			file, key = f, k
		}
		n, err := exportSnapshots(ctx, src, snaps, m.Slug, opt)
		st.Snapshots += n
		return err
	})
	return st, err
}
