package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
// export's root ("markets", "snapshots/<key>", "trades/<key>",
// "gaps/<key>"; the caller adds the extension). Closing it completes the
// file. A file with an Abort method (Aborter) is aborted instead when the
// export fails while it is open: it is incomplete.
type Create func(name string) (io.WriteCloser, error)

// Aborter is a file of a split export that can be given up, leaving
// nothing that looks complete.
type Aborter interface {
	Abort()
}

// abortFile gives up f: aborted when it can be, else closed.
func abortFile(f io.WriteCloser) error {
	if a, ok := f.(Aborter); ok {
		a.Abort()
		return nil
	}
	return f.Close()
}

// ExportSplit writes the markets opt.Filter selects to the file "markets",
// their snapshots to a file "snapshots/<key>" per market or per day, and
// their trades and recording gaps beside them in "trades/<key>" and
// "gaps/<key>" (written only for a key that has some), all in opt.Format:
// each file holds one kind of record. opt.What, when it names one kind,
// limits the files to it (the markets' file, which an import reads first,
// is written whatever it names). Like Export it streams: one page of
// records and the open files' buffers are held at a time.
func ExportSplit(ctx context.Context, src Source, create Create, split Split, opt ExportOptions) (st Stats, err error) {
	if split != SplitMarket && split != SplitDay {
		return st, fmt.Errorf("transfer: unknown split %q (want market or day)", split)
	}
	opt = exportDefaults(opt)
	want := func(w What) bool { return opt.What == "" || opt.What == All || opt.What == w }
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
	snaps := &splitFile{what: Snapshots, create: create, newEncoder: newEncoder}
	trades := &splitFile{what: Trades, create: create, newEncoder: newEncoder}
	gaps := &splitFile{what: Gaps, create: create, newEncoder: newEncoder}
	defer func() {
		if err != nil {
			// The open files hold part of what they should: none is
			// completed, as a failed export to one file leaves none.
			err = errors.Join(err, snaps.abort(), trades.abort(), gaps.abort(), abortFile(mf))
			return
		}
		err = errors.Join(snaps.close(), trades.close(), gaps.close(), markets.Flush(), mf.Close())
	}()
	err = eachMarket(ctx, src, opt, func(m *store.Market) error {
		k := m.Slug
		if split == SplitDay {
			k = m.StartTime.UTC().Format("2006-01-02")
		} else if !plainFileName(k) {
			// Joined to the directory, "../x" would write outside it.
			return fmt.Errorf("transfer: market %q: its slug is not a plain file name to name its files by: export it with --split day", k)
		}
		if err := markets.Encode(Record{Market: m}); err != nil {
			return err
		}
		st.Markets++
		if want(Snapshots) {
			enc, err := snaps.at(k)
			if err != nil {
				return err
			}
			n, err := exportSnapshots(ctx, src, enc, m.Slug, opt)
			st.Snapshots += n
			if err != nil {
				return err
			}
		}
		if want(Trades) {
			n, err := exportTrades(ctx, src, lazyEncoder{trades, k}, m.Slug, opt)
			st.Trades += n
			if err != nil {
				return err
			}
		}
		if want(Gaps) {
			n, err := exportGaps(ctx, src, lazyEncoder{gaps, k}, m.Slug)
			st.Gaps += n
			return err
		}
		return nil
	})
	return st, err
}

// splitFile is the open file of one kind of record of a split export: the
// one of the current key.
type splitFile struct {
	what       What
	create     Create
	newEncoder func(io.Writer, What) (Encoder, error)
	key        string
	file       io.WriteCloser
	enc        Encoder
}

// at returns the encoder of the file of key k, completing the file of the
// key before (keys come in order: each market's records go to one file).
func (f *splitFile) at(k string) (Encoder, error) {
	if f.file != nil && f.key == k {
		return f.enc, nil
	}
	if err := f.close(); err != nil {
		return nil, err
	}
	w, err := f.create(string(f.what) + "/" + k)
	if err != nil {
		return nil, err
	}
	enc, err := f.newEncoder(w, f.what)
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	f.file, f.enc, f.key = w, enc, k
	return enc, nil
}

// close completes the open file, if any.
func (f *splitFile) close() error {
	if f.file == nil {
		return nil
	}
	err := errors.Join(f.enc.Flush(), f.file.Close())
	f.file, f.enc = nil, nil
	return err
}

// abort gives up the open file, if any.
func (f *splitFile) abort() error {
	if f.file == nil {
		return nil
	}
	err := abortFile(f.file)
	f.file, f.enc = nil, nil
	return err
}

// lazyEncoder writes to the file of key, opening it at its first record.
type lazyEncoder struct {
	f   *splitFile
	key string
}

func (l lazyEncoder) Encode(r Record) error {
	enc, err := l.f.at(l.key)
	if err != nil {
		return err
	}
	return enc.Encode(r)
}

func (l lazyEncoder) Flush() error { return nil }

// plainFileName reports whether name names a file in a directory: not
// empty, "." or "..", and without a path separator.
func plainFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}
