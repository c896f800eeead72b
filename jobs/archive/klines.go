package archive

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/updown/updown/jobs/book"
	"github.com/updown/updown/store"
)

// CoinPrices are the coin prices snapshots take: Binance klines the
// operator supplies (--coin-prices), else the Chainlink frames of the
// stream.
type CoinPrices struct {
	klines map[store.Coin][]kline
	// points are Chainlink prices heard in the stream, newest last.
	points map[store.Coin][]coinPoint
}

type kline struct {
	open, close int64 // ms; close is the last millisecond of the kline
	o, c        float64
}

// NewCoinPrices returns an empty set.
func NewCoinPrices() *CoinPrices {
	return &CoinPrices{klines: map[store.Coin][]kline{}, points: map[store.Coin][]coinPoint{}}
}

// CoinOfFile names the coin of a Binance archive file by its symbol,
// e.g. BTCUSDT-1s-2026-05-12.csv.
func CoinOfFile(name string) (store.Coin, bool) {
	base := strings.ToUpper(filepath.Base(name))
	for _, c := range store.Coins {
		if strings.HasPrefix(base, string(c)+"USDT") {
			return c, true
		}
	}
	return "", false
}

// AddKlines reads a Binance public archive CSV of klines (1 s or 1 m; open
// time, open, high, low, close, volume, close time, …; times in ms, or µs
// as spot files write them from 2025; a header line is skipped) for the
// coin, or the zip the archive serves it in (the CSVs it holds).
func (cp *CoinPrices) AddKlines(coin store.Coin, name string, r io.Reader) error {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(4); !bytes.Equal(magic, zipMagic) {
		return cp.addKlines(coin, name, br)
	}
	data, err := io.ReadAll(br)
	if err != nil {
		return &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("read: %w", err)}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return &InputError{Pos: Pos{File: name}, Err: fmt.Errorf("not a readable zip: %w", err)}
	}
	n := 0
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err == nil {
			err = cp.addKlines(coin, name+": "+f.Name, rc)
			rc.Close()
		}
		if err != nil {
			if _, ok := errors.AsType[*InputError](err); ok {
				return err
			}
			return &InputError{Pos: Pos{File: name + ": " + f.Name}, Err: err}
		}
		n++
	}
	if n == 0 {
		return &InputError{Pos: Pos{File: name}, Err: errors.New("the zip holds no file of klines")}
	}
	return nil
}

// zipMagic begins a zip archive (a local file header).
var zipMagic = []byte("PK\x03\x04")

// addKlines reads a CSV of klines (AddKlines).
func (cp *CoinPrices) addKlines(coin store.Coin, name string, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var out []kline
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		bad := func(field string, err error) error {
			return &InputError{Pos: Pos{File: name, Line: int64(line)}, Field: field, Err: err}
		}
		if len(f) < 7 {
			return bad("", fmt.Errorf("a kline has 12 fields (open time, open, high, low, close, volume, close time, …), this line %d", len(f)))
		}
		open, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		if err != nil {
			if line == 1 {
				continue // the header
			}
			return bad("open time", fmt.Errorf("%q is not epoch milliseconds or microseconds", f[0]))
		}
		closeT, err := strconv.ParseInt(strings.TrimSpace(f[6]), 10, 64)
		if err != nil {
			return bad("close time", fmt.Errorf("%q is not epoch milliseconds or microseconds", f[6]))
		}
		if open > 1e14 { // microseconds
			open, closeT = open/1000, closeT/1000
		}
		o, err := book.ParseNum(f[1])
		if err != nil || o <= 0 {
			return bad("open", fmt.Errorf("%q is not a price", f[1]))
		}
		c, err := book.ParseNum(f[4])
		if err != nil || c <= 0 {
			return bad("close", fmt.Errorf("%q is not a price", f[4]))
		}
		if closeT < open {
			return bad("close time", errors.New("before the open time"))
		}
		out = append(out, kline{open: open, close: closeT, o: o, c: c})
	}
	if err := sc.Err(); err != nil {
		return &InputError{Pos: Pos{File: name, Line: int64(line + 1)}, Err: err}
	}
	all := append(cp.klines[coin], out...)
	slices.SortFunc(all, func(a, b kline) int { return cmp.Compare(a.open, b.open) })
	cp.klines[coin] = slices.CompactFunc(all, func(a, b kline) bool { return a.open == b.open })
	return nil
}

// HasKlines reports whether klines were given for the coin.
func (cp *CoinPrices) HasKlines(coin store.Coin) bool { return len(cp.klines[coin]) > 0 }

// addPoint keeps a Chainlink price heard in the stream.
func (cp *CoinPrices) addPoint(p coinPoint) {
	coin, ok := coinOfSymbol(p.symbol)
	if !ok {
		return
	}
	ps := cp.points[coin]
	// Only the recent past of the file being read is ever asked for: keep
	// the list short, but never drop the prices of the last pointKeep
	// before this one (a dump read after another of the same hours asks
	// for prices the first one's points have passed).
	if len(ps) > 4096 {
		cut := p.at.Add(-pointKeep)
		old, _ := slices.BinarySearchFunc(ps, cut, func(q coinPoint, t time.Time) int { return q.at.Compare(t) })
		if old = min(old, len(ps)-1024); old >= 1024 { // a run at a time, not one a price
			ps = append(ps[:0], ps[old:]...)
		}
	}
	n := len(ps)
	if n == 0 || p.at.After(ps[n-1].at) {
		cp.points[coin] = append(ps, p)
		return
	}
	// Behind the latest price: a file read after another that covers the
	// same hours (a dump a market, imported together) goes back in time.
	// Its prices are put in their place; one at an instant already held
	// is the same price heard again.
	i, found := slices.BinarySearchFunc(ps, p.at, func(q coinPoint, t time.Time) int { return q.at.Compare(t) })
	if found {
		return
	}
	cp.points[coin] = slices.Insert(ps, i, p)
}

// pointKeep is how far back from the latest price heard the stream's
// prices are kept: an instant asked for is near the events being read,
// or a silence (GapAfter) past a market's last event.
const pointKeep = time.Hour

func coinOfSymbol(s string) (store.Coin, bool) {
	s = strings.ToUpper(s)
	for _, c := range store.Coins {
		if strings.HasPrefix(s, string(c)) {
			return c, true
		}
	}
	return "", false
}

// pointMaxAge is how old a Chainlink price may be and still price an
// instant (the feed speaks about every second).
const pointMaxAge = 3 * time.Second

// At is the coin price at the instant t: with klines, the close of the
// kline before the one holding t (the last price at or before that
// kline's open), or its open when it is the first; else the latest
// Chainlink price at or before t, if recent. ok is false when neither
// covers t.
func (cp *CoinPrices) At(coin store.Coin, t time.Time) (float64, bool) {
	if ks := cp.klines[coin]; len(ks) > 0 {
		ms := t.UnixMilli()
		i, _ := slices.BinarySearchFunc(ks, ms, func(k kline, ms int64) int { return cmp.Compare(k.open, ms+1) })
		// ks[i-1] is the last kline opening at or before t.
		if i == 0 || ks[i-1].close < ms {
			return 0, false
		}
		k := ks[i-1]
		if i >= 2 && ks[i-2].close+1 == k.open {
			return ks[i-2].c, true
		}
		return k.o, true
	}
	ps := cp.points[coin]
	i, _ := slices.BinarySearchFunc(ps, t, func(p coinPoint, t time.Time) int {
		if p.at.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 || t.Sub(ps[i-1].at) > pointMaxAge {
		return 0, false
	}
	return ps[i-1].value, true
}
