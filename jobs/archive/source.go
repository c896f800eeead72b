package archive

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"github.com/klauspost/compress/zstd"

	"github.com/updown/updown/jobs/book"
)

// Format is an archive's encoding of the market channel's events.
type Format string

// Formats `updown import events` reads.
const (
	// WSJSONL is the market channel's own frames, one JSON frame (an
	// object or an array) per line, as the websocket sends them and raw
	// dumps keep them; gzip and zstd are recognised.
	WSJSONL Format = "ws-jsonl"
	// PMXTv2 is the PMXT archive's hourly Parquet (REFERENCE.md, Archives).
	PMXTv2 Format = "pmxt-v2"
)

// Pos is where an event was read: a file and its line (ws-jsonl) or row
// (pmxt-v2), counted from 1.
type Pos struct {
	File string
	Line int64
	Row  int64
}

func (p Pos) String() string {
	switch {
	case p.Row > 0:
		return fmt.Sprintf("%s: row %d", p.File, p.Row)
	case p.Line > 0:
		return fmt.Sprintf("%s: line %d", p.File, p.Line)
	}
	return p.File
}

// InputError is bad input: the file, the line or row, and the field.
type InputError struct {
	Pos   Pos
	Field string // "" when the whole line or file is at fault
	Err   error
}

func (e *InputError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: field %s: %v", e.Pos, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Pos, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// batch is a run of one market's events in time order, or of the time
// ordered stream of every market (ws-jsonl), with where each came from.
type item struct {
	ev  book.Event
	pos Pos
	// point, when set, is a coin price the stream carried at this place
	// (the item is no event).
	point *coinPoint
}

// coinPoint is a coin price the stream itself carries (Chainlink frames).
type coinPoint struct {
	symbol string
	at     time.Time
	value  float64
}

// openFile opens an input, decompressing it when it starts like gzip or
// zstd.
func openFile(name string, counted *atomic.Int64) (io.Reader, func() error, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	cr := &countingReader{r: f, n: counted}
	br := bufio.NewReaderSize(cr, 1<<20)
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("gzip header: %w", err)}
		}
		zr.Multistream(false)
		return &decompressed{r: &gzipMembers{zr: zr, br: br}, kind: "gzip", raw: cr, br: br}, f.Close, nil
	case bytes.Equal(magic, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, nil, &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("zstd header: %w", err)}
		}
		return &decompressed{r: zr, kind: "zstd", raw: cr, br: br}, func() error { zr.Close(); return f.Close() }, nil
	}
	for _, u := range unread {
		if bytes.HasPrefix(magic, u.magic) {
			f.Close()
			return nil, nil, &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("a %s file, which is not read: decompress it (%s), or compress it with gzip or zstd, which are", u.kind, u.how)}
		}
	}
	return br, f.Close, nil
}

// unread are the compressed forms not read, told by their first bytes:
// read as text, their bytes were a first line that is not JSON.
var unread = []struct {
	magic     []byte
	kind, how string
}{
	{[]byte("PK\x03\x04"), "zip", "unzip"},
	{[]byte("BZh"), "bzip2", "bunzip2"},
	{[]byte{0xfd, '7', 'z', 'X'}, "xz", "unxz"},
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// gzipMembers reads the members of a gzip file one after another, as
// gzip itself does, zero bytes after the last one (a file written into
// space allocated ahead) taken for its end as gzip takes them.
type gzipMembers struct {
	zr   *gzip.Reader
	br   *bufio.Reader
	done bool
	// out counts the bytes inflated, checked those of the members whose
	// checksum was read and matched.
	out, checked int64
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		if g.done {
			return 0, io.EOF
		}
		n, err := g.zr.Read(p)
		g.out += int64(n)
		if !errors.Is(err, io.EOF) {
			return n, err
		}
		g.checked = g.out
		// The member ended, its checksum checked: another, zeros to the
		// file's end, or the end.
		if err := g.next(); err != nil {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// next begins the member after the one read, or sets done at the file's
// end (after zeros, if any).
func (g *gzipMembers) next() error {
	b, err := g.br.Peek(1)
	switch {
	case errors.Is(err, io.EOF):
		g.done = true
		return nil
	case err != nil:
		return err
	case b[0] == 0:
		for {
			c, err := g.br.ReadByte()
			if errors.Is(err, io.EOF) {
				g.done = true
				return nil
			}
			if err != nil {
				return err
			}
			if c != 0 {
				_ = g.br.UnreadByte()
				return errTrailing // bytes after the padding
			}
		}
	}
	if b, _ := g.br.Peek(2); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return errTrailing
	}
	if err := g.zr.Reset(g.br); err != nil {
		return err
	}
	g.zr.Multistream(false)
	return nil
}

// errTrailing is bytes after a gzip file's last member (and any zeros)
// that begin no other member: the data before them was read whole.
var errTrailing = errors.New("bytes after the last member begin no other member")

// decompressed reads a compressed input; its errors but io.EOF are
// errCompressed. raw is the file's bytes as read, br what of them the
// decompressor has not taken yet.
type decompressed struct {
	r    io.Reader
	kind string
	raw  *countingReader
	br   *bufio.Reader
}

func (d *decompressed) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = &errCompressed{kind: d.kind, err: err, off: d.raw.read - int64(d.br.Buffered()),
			ended: d.raw.eof && d.br.Buffered() == 0}
	}
	return n, err
}

// errCompressed is a compressed stream that cannot be read to its end:
// cut short, or corrupt. off is the byte of the file the decompressor
// had come to (a block's end, for zstd), ended whether the file had.
type errCompressed struct {
	kind  string
	err   error
	off   int64
	ended bool
}

func (e *errCompressed) Error() string {
	if errors.Is(e.err, errTrailing) {
		return fmt.Sprintf("the %s file goes on after its last member, from byte %d, with bytes that begin no other member: everything before them was read; cut them off (or compress the file again) to import it", e.kind, e.off)
	}
	if e.ended && errors.Is(e.err, io.ErrUnexpectedEOF) {
		return fmt.Sprintf("the %s stream is truncated or corrupt near byte %d of the file (%v): the file ends before its data does", e.kind, e.off, e.err)
	}
	// The decompressor's io.ErrUnexpectedEOF with the file going on is a
	// member (frame) whose data is corrupt, not a file cut short.
	return fmt.Sprintf("the %s stream is corrupt near byte %d of the file (%v)", e.kind, e.off, e.err)
}

func (e *errCompressed) Unwrap() error { return e.err }

// countingReader counts the bytes read, into n (shared by an import's
// files) when set, and read (this file's); eof is whether r ended.
type countingReader struct {
	r    io.Reader
	n    *atomic.Int64
	read int64
	eof  bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n != nil {
		c.n.Add(int64(n))
	}
	c.read += int64(n)
	if errors.Is(err, io.EOF) {
		c.eof = true
	}
	return n, err
}

// maxLine bounds one frame: an initial dump of every book of a busy
// subscription is a few megabytes.
const maxLine = 64 << 20

// readWSJSONL reads a ws-jsonl file and hands its events, one frame at a
// time with the frame's place, to fn, and Chainlink price frames to price.
// The events are fn's until it returns.
func readWSJSONL(ctx context.Context, name string, counted *atomic.Int64, fn func([]book.Event, Pos) error, price func(coinPoint)) error {
	r, closeFn, err := openFile(name, counted)
	if err != nil {
		return err
	}
	defer closeFn()
	if err := notParquet(name, r); err != nil {
		return err
	}
	return eachFrame(ctx, name, r, func(f frame) error {
		if f.isPrice {
			for _, p := range f.prices {
				price(p)
			}
			return nil
		}
		return fn(f.events, f.pos)
	})
}

// frame is one frame of a ws-jsonl file as eachFrame hands it on: its
// events or Chainlink prices (isPrice), its place, its text (the line
// without the white space around it) and the offset of that text in the
// file's bytes as read.
type frame struct {
	events  []book.Event
	prices  []coinPoint
	isPrice bool
	pos     Pos
	text    []byte
	off     int64
}

// utf8BOM is the byte order mark some tools write before a text file's
// first line.
var utf8BOM = []byte("\xef\xbb\xbf")

// eachFrame reads r, the ws-jsonl file name, a line at a time and hands
// each frame that is not blank to fn, the frame's events and text being
// fn's until it returns. A line too long, a read that fails and a frame
// that is not one are InputErrors at their line (frameOrStream).
func eachFrame(ctx context.Context, name string, r io.Reader, fn func(frame) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var (
		line, off int64 // lines read, bytes read
		dec       book.Decoder
		evs       []book.Event
	)
	for {
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		data, err := readLine(br)
		if len(data) > 0 || err == nil {
			line++
		}
		if err != nil && !errors.Is(err, io.EOF) {
			if len(data) == 0 {
				line++ // the line it failed in: one too long, or cut at its start
			}
			return &InputError{Pos: Pos{File: name, Line: line}, Err: err}
		}
		text, lead := data, 0
		if line == 1 && bytes.HasPrefix(text, utf8BOM) {
			// A byte order mark, as Windows editors save text: not the
			// frame's.
			text, lead = text[len(utf8BOM):], len(utf8BOM)
		}
		if t := bytes.TrimSpace(text); len(t) > 0 {
			f := frame{pos: Pos{File: name, Line: line}, text: t,
				off: off + int64(lead+len(text)-len(bytes.TrimLeftFunc(text, unicode.IsSpace)))}
			var ferr error
			if evs, f.prices, f.isPrice, ferr = decodeFrame(&dec, evs[:0], t, f.pos); ferr != nil {
				return frameOrStream(ctx, r, br, f.pos, f.off+int64(len(t)), ferr)
			}
			f.events = evs
			if err := fn(f); err != nil {
				return err
			}
		}
		off += int64(len(data))
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// notParquet refuses a Parquet file (a PMXT hour, an export) read as
// ws-jsonl, whose bytes would be a first line that is not JSON.
func notParquet(name string, r io.Reader) error {
	if br, ok := r.(*bufio.Reader); ok {
		if magic, _ := br.Peek(4); string(magic) == "PAR1" {
			return &InputError{Pos: Pos{File: name}, Err: errors.New("a Parquet file, not ws-jsonl text: import a PMXT archive hour with --format pmxt-v2 (on its own), an `updown export` file with `updown import --in`")}
		}
	}
	return nil
}

// frameOrStream is a bad frame's error, unless the compressed stream it
// came from is corrupt: a corrupt stream may inflate to garbage before its
// checksum is read, so it is read on to find out: a gzip file to the end
// of the member the frame (its bytes up to end, inflated) came from, a
// zstd one to its end.
func frameOrStream(ctx context.Context, r io.Reader, br *bufio.Reader, pos Pos, end int64, ferr error) error {
	d, ok := r.(*decompressed)
	if !ok {
		return ferr
	}
	g, members := d.r.(*gzipMembers)
	var err error
	if members {
		var buf [32 << 10]byte
		for g.checked < end && err == nil && ctx.Err() == nil {
			_, err = br.Read(buf[:])
		}
	} else {
		_, err = io.Copy(io.Discard, ctxReader{ctx, br})
	}
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return &InputError{Pos: pos, Err: err}
	}
	return ferr
}

// decodeFrame decodes a line of a ws-jsonl file: a market channel frame's
// events (appended to evs), or a Chainlink frame's prices (isPrice).
func decodeFrame(dec *book.Decoder, evs []book.Event, t []byte, pos Pos) (_ []book.Event, ps []coinPoint, isPrice bool, err error) {
	// A market channel frame decodes to events of a type; a Chainlink
	// frame, rare beside them, to one without (or fails).
	evs, derr := dec.DecodeAppend(evs, t)
	var perr error
	if derr != nil || len(evs) == 1 && evs[0].EventType == "" {
		ps, isPrice, perr = chainlinkFrame(t)
	}
	switch {
	case isPrice && perr != nil:
		return evs, nil, true, &InputError{Pos: pos, Field: "payload", Err: perr}
	case isPrice:
		return evs, ps, true, nil
	case derr != nil:
		return evs, nil, false, frameError(pos, t, derr)
	}
	return evs, nil, false, nil
}

// sortedFrame is a frame of a ws-jsonl file read in time order: its time
// (Unix ns), and where its bytes lie.
type sortedFrame struct {
	at, off, line int64
	n             int32
}

// readWSJSONLSorted reads a ws-jsonl file as readWSJSONL does, but hands
// its frames over in the order of their times (a frame's latest event or
// price, which it came after: an initial dump's array holds books quiet
// for hours; one without a time keeps its place after the frame before
// it), those of a time in the file's order: a file whose lines are out
// of time order (shuffled, or captures concatenated in the wrong order).
// The file is read twice: once to check every frame and learn its time
// and place, 32 bytes a frame held, then frame by frame in time order
// from the file itself, or from a temporary copy of its lines when it is
// compressed. A book is placed at its own time, the last change of the
// book it carries.
func readWSJSONLSorted(ctx context.Context, name string, counted *atomic.Int64, fn func([]book.Event, Pos) error, price func(coinPoint)) error {
	r, closeFn, err := openFile(name, counted)
	if err != nil {
		return err
	}
	defer closeFn()
	if err := notParquet(name, r); err != nil {
		return err
	}
	var src io.ReaderAt
	var spill *bufio.Writer
	sizeHint := 0 // frames expected, where the file's size tells
	if _, ok := r.(*decompressed); ok {
		f, err := os.CreateTemp("", "updown-import-*.jsonl")
		if err != nil {
			return fmt.Errorf("sort %s by time: a temporary copy in TMPDIR (%s): %w", name, os.TempDir(), err)
		}
		// Removed at once, read through the open handle: a process
		// killed leaves nothing. Where an open file cannot be removed
		// (Windows), it is removed once closed.
		if runtime.GOOS == "windows" {
			defer os.Remove(f.Name())
		} else if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return fmt.Errorf("sort %s by time: remove the temporary copy's name: %w", name, err)
		}
		defer f.Close()
		src, spill = f, bufio.NewWriterSize(f, 1<<20)
	} else {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("open %s: %w", name, err)
		}
		defer f.Close()
		src = f
		// A frame of the market channel takes some 250 bytes and more (a
		// book, an array of books far more): the list is sized for a
		// frame every 512 bytes, under the count, and grows from there.
		if st, err := f.Stat(); err == nil {
			sizeHint = int(min(st.Size()/512, 1<<26))
		}
	}
	spillErr := func(err error) error {
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("sort %s by time: the temporary copy of its lines in TMPDIR (%s): %w; set TMPDIR to a directory with room for the file uncompressed", name, os.TempDir(), err)
		}
		return fmt.Errorf("sort %s by time: %w", name, err)
	}
	frames := make([]sortedFrame, 0, sizeHint)
	var out, prevAt int64 // bytes spilt, the time of the frame before
	err = eachFrame(ctx, name, r, func(f frame) error {
		at := int64(0) // the frame came after its latest event or price
		if f.isPrice {
			for _, p := range f.prices {
				at = max(at, p.at.UnixNano())
			}
		} else {
			for i := range f.events {
				if !f.events[i].Time.IsZero() {
					at = max(at, f.events[i].Time.UnixNano())
				}
			}
		}
		if at == 0 {
			at = prevAt
		}
		prevAt = at
		fr := sortedFrame{at: at, line: f.pos.Line, n: int32(len(f.text))}
		if spill != nil {
			if _, err := spill.Write(f.text); err != nil {
				return spillErr(err)
			}
			fr.off = out
			out += int64(len(f.text))
		} else {
			fr.off = f.off
		}
		frames = append(frames, fr)
		return nil
	})
	if err != nil {
		return err
	}
	if spill != nil {
		if err := spill.Flush(); err != nil {
			return spillErr(err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The line is unique: (time, line) is the file's order among frames of
	// one time, as a stable sort keeps it, in O(n log n).
	slices.SortFunc(frames, func(a, b sortedFrame) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.line, b.line)) })
	if err := ctx.Err(); err != nil {
		return err
	}
	// The second pass counts the file's size again, a share a frame, for
	// the import's progress (its total counts a file sorted twice).
	var size int64
	if st, err := os.Stat(name); err == nil && counted != nil {
		size = st.Size()
		if len(frames) == 0 {
			counted.Add(size)
		}
	}
	var (
		buf []byte
		dec book.Decoder
		evs []book.Event
	)
	for i, fr := range frames {
		if size > 0 {
			n := int64(len(frames))
			counted.Add(size*int64(i+1)/n - size*int64(i)/n)
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		buf = slices.Grow(buf[:0], int(fr.n))[:fr.n]
		if _, err := src.ReadAt(buf, fr.off); err != nil {
			return fmt.Errorf("sort %s by time: read line %d again: %w", name, fr.line, err)
		}
		pos := Pos{File: name, Line: fr.line}
		ps, isPrice := []coinPoint(nil), false
		var ferr error
		if evs, ps, isPrice, ferr = decodeFrame(&dec, evs[:0], buf, pos); ferr != nil {
			return ferr
		}
		if isPrice {
			for _, p := range ps {
				price(p)
			}
		} else if err := fn(evs, pos); err != nil {
			return err
		}
	}
	return nil
}

// readLine returns the next line without its end; io.EOF with the last.
func readLine(br *bufio.Reader) ([]byte, error) {
	data, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return data, err
	}
	buf := append([]byte(nil), data...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(buf) > maxLine {
			return nil, fmt.Errorf("a line longer than %d MiB", maxLine>>20)
		}
		data, err = br.ReadSlice('\n')
		buf = append(buf, data...)
	}
	return buf, err
}

// frameError names what is wrong with a frame: not JSON, or which field.
func frameError(pos Pos, frame []byte, err error) error {
	if !json.Valid(frame) {
		s := frame
		if len(s) > 80 {
			s = s[:80]
		}
		return &InputError{Pos: pos, Err: fmt.Errorf("the frame is not JSON (%q…): %w", s, err)}
	}
	field := ""
	var fe *book.FieldError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &fe):
		field = fe.Field
	case errors.As(err, &te):
		field = te.Field // a value of the wrong JSON type ("bids": 5)
	}
	return &InputError{Pos: pos, Field: field, Err: err}
}

// chainlinkFrame reads a real-time data frame of the Chainlink price
// feed, {"topic":"crypto_prices_chainlink","payload":{"symbol":"btc/usd",
// "timestamp":ms,"value":N}}, as raw dumps keep them beside the market
// channel, or the frame the socket sends first on each subscription, of
// the recent prices: {"topic":"crypto_prices_chainlink","type":"subscribe",
// "payload":{"symbol":"btc/usd","data":[{"timestamp":ms,"value":N},...]}}.
// ok is false for any other frame, the same socket's Binance prices (topic
// crypto_prices, "btcusdt") among them: markets do not settle on those,
// and a dump that kept both would mix two prices.
func chainlinkFrame(b []byte) ([]coinPoint, bool, error) {
	if b[0] != '{' || !bytes.Contains(b[:min(len(b), 200)], []byte(`"topic"`)) {
		return nil, false, nil
	}
	type point struct {
		Timestamp book.Text `json:"timestamp"`
		Value     book.Num  `json:"value"`
	}
	var f struct {
		Topic   string `json:"topic"`
		Payload struct {
			Symbol string `json:"symbol"`
			point
			Data *[]point `json:"data"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(b, &f); err != nil || !strings.HasPrefix(f.Topic, chainlinkTopic) {
		return nil, false, nil
	}
	symbol := strings.ToLower(f.Payload.Symbol)
	read := func(p point, where string) (coinPoint, error) {
		var ms int64
		if _, err := fmt.Sscan(string(p.Timestamp), &ms); err != nil || ms <= 0 {
			return coinPoint{}, fmt.Errorf("%stimestamp %q is not epoch milliseconds", where, p.Timestamp)
		}
		if !p.Value.Set || p.Value.V <= 0 {
			return coinPoint{}, fmt.Errorf("%svalue is not a positive price", where)
		}
		return coinPoint{symbol: symbol, at: time.UnixMilli(ms).UTC(), value: p.Value.V}, nil
	}
	if f.Payload.Data != nil && f.Payload.Timestamp == "" && !f.Payload.Value.Set {
		out := make([]coinPoint, 0, len(*f.Payload.Data))
		for i, p := range *f.Payload.Data {
			cp, err := read(p, fmt.Sprintf("data[%d]: ", i))
			if err != nil {
				return nil, true, err
			}
			out = append(out, cp)
		}
		return out, true, nil
	}
	cp, err := read(f.Payload.point, "")
	if err != nil {
		return nil, true, err
	}
	return []coinPoint{cp}, true, nil
}

// chainlinkTopic is the real-time data socket's topic of Chainlink prices.
const chainlinkTopic = "crypto_prices_chainlink"

// errFirstFound ends the read of a file's first timed event.
var errFirstFound = errors.New("first event found")

// firstEvent is the time of the first event or coin price of a ws-jsonl
// file that has one; zero when none does or the file cannot be read (its
// import then says why). Books are passed over, but in a file of books
// alone: a book is stamped with its last change, and the initial dump a
// capture begins with lists books quiet for hours (a market listed a day
// ahead of its window), older than the file before it.
func firstEvent(ctx context.Context, name string) time.Time {
	var at, firstBook time.Time
	// A coin price ends the read at the next event, or (a file of prices
	// alone) within a few thousand lines.
	readCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := readWSJSONL(readCtx, name, nil, func(evs []book.Event, _ Pos) error {
		if !at.IsZero() { // a coin price came first
			return errFirstFound
		}
		for _, e := range evs {
			switch {
			case e.Time.IsZero():
			case e.EventType != "book":
				at = e.Time
				return errFirstFound
			case firstBook.IsZero():
				firstBook = e.Time
			}
		}
		return nil
	}, func(p coinPoint) {
		if at.IsZero() {
			at = p.at
			cancel()
		}
	})
	if err != nil && !errors.Is(err, errFirstFound) && (ctx.Err() != nil || !errors.Is(err, context.Canceled)) {
		return time.Time{}
	}
	return cmp.Or(at, firstBook)
}

// byFirstEvent orders ws-jsonl files by the time of their first event
// (stably: files without one keep their place among those that begin at
// the same time, first).
func byFirstEvent(ctx context.Context, files []string) []string {
	if len(files) < 2 {
		return files
	}
	first := make(map[string]time.Time, len(files))
	for _, name := range files {
		first[name] = firstEvent(ctx, name)
	}
	out := slices.Clone(files)
	slices.SortStableFunc(out, func(a, b string) int { return first[a].Compare(first[b]) })
	return out
}
