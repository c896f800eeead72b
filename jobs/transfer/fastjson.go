package transfer

import (
	"bytes"
	"strconv"

	"github.com/updown/updown/store"
)

// fastSnapshotLine parses a snapshot line as Export writes it, several
// times faster than encoding/json: an import is millions of them. It
// accepts only what encoding/json would read the same way: an object of
// the snapshot keys (any order, each once, lower case as written), plain
// ASCII strings without escapes, numbers in JSON's grammar, books of
// {"price","size"} levels or null. On anything else ok is false and the
// caller takes the general path, which also reports errors.
func fastSnapshotLine(b []byte) (l jsonLine, ok bool) {
	p := fastParser{b: b}
	if !p.lit('{') {
		return l, false
	}
	var seen uint16
	for {
		key, ok := p.str()
		if !ok || !p.lit(':') {
			return l, false
		}
		bit := snapshotKey(key)
		if bit == 0 || seen&bit != 0 {
			return l, false
		}
		seen |= bit
		if !p.value(&l, bit) {
			return l, false
		}
		if p.lit(',') {
			continue
		}
		if p.lit('}') {
			break
		}
		return l, false
	}
	p.ws()
	l.fast = true
	return l, l.Type == "snapshot" && p.i == len(b)
}

const (
	keyType uint16 = 1 << iota
	keySlug
	keyTime
	keyCoinPrice
	keyPriceUp
	keyPriceDown
	keyBookUp
	keyBookDown
)

// snapshotKey is the bit of a snapshot line's key, or 0 for another key.
func snapshotKey(key []byte) uint16 {
	switch string(key) {
	case "type":
		return keyType
	case "slug":
		return keySlug
	case "time":
		return keyTime
	case "coin_price":
		return keyCoinPrice
	case "price_up":
		return keyPriceUp
	case "price_down":
		return keyPriceDown
	case "orderbook_up":
		return keyBookUp
	case "orderbook_down":
		return keyBookDown
	}
	return 0
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *fastParser) peek(c byte) bool { return p.i < len(p.b) && p.b[p.i] == c }

// value reads the value of the key bit into l.
func (p *fastParser) value(l *jsonLine, bit uint16) bool {
	switch bit {
	case keyType:
		v, ok := p.str()
		l.Type = string(v)
		return ok
	case keySlug:
		v, ok := p.str()
		l.Slug = string(v)
		return ok
	case keyTime:
		v, ok := p.str()
		l.Time = string(v)
		return ok
	case keyBookUp, keyBookDown:
		book, ok := p.book()
		if bit == keyBookUp {
			l.fastUp = book
		} else {
			l.fastDown = book
		}
		return ok
	}
	v, ok := p.num()
	switch bit {
	case keyCoinPrice:
		l.CoinPrice = &v
	case keyPriceUp:
		l.PriceUp = &v
	default:
		l.PriceDown = &v
	}
	return ok
}

// lit consumes c after optional white space.
func (p *fastParser) lit(c byte) bool {
	p.ws()
	if !p.peek(c) {
		return false
	}
	p.i++
	return true
}

// str reads a string of printable ASCII without escapes.
func (p *fastParser) str() ([]byte, bool) {
	if !p.lit('"') {
		return nil, false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// num reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *fastParser) num() (float64, bool) {
	p.ws()
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.peek('-') {
		p.i++
	}
	switch {
	case p.peek('0'):
		p.i++
	case digits() == 0:
		return 0, false
	}
	if p.peek('.') {
		p.i++
		if digits() == 0 {
			return 0, false
		}
	}
	if p.peek('e') || p.peek('E') {
		p.i++
		if p.peek('+') || p.peek('-') {
			p.i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	return v, err == nil
}

// book reads null or {"bids":[levels],"asks":[levels]} (either key may be
// missing, neither repeated) straight into a store.Book: the general
// path's pointers for missing values cost two allocations a level.
func (p *fastParser) book() (*store.Book, bool) {
	p.ws()
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return nil, true
	}
	if !p.lit('{') {
		return nil, false
	}
	b := &store.Book{}
	if p.lit('}') {
		return b, true
	}
	var seenBids, seenAsks bool
	for {
		key, ok := p.str()
		if !ok || !p.lit(':') {
			return nil, false
		}
		var dst *[]store.Level
		switch {
		case string(key) == "bids" && !seenBids:
			seenBids, dst = true, &b.Bids
		case string(key) == "asks" && !seenAsks:
			seenAsks, dst = true, &b.Asks
		default:
			return nil, false
		}
		if *dst, ok = p.levels(); !ok {
			return nil, false
		}
		if p.lit(',') {
			continue
		}
		if p.lit('}') {
			return b, true
		}
		return nil, false
	}
}

// levels reads [{"price":n,"size":n},…] (each level's keys in either
// order); empty or null is nil, as on the general path.
func (p *fastParser) levels() ([]store.Level, bool) {
	p.ws()
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return nil, true
	}
	if !p.lit('[') {
		return nil, false
	}
	if p.lit(']') {
		return nil, true
	}
	var out []store.Level
	for {
		if !p.lit('{') {
			return nil, false
		}
		var l store.Level
		var havePrice, haveSize bool
		for k := range 2 {
			if k == 1 && !p.lit(',') {
				return nil, false
			}
			key, ok := p.str()
			if !ok || !p.lit(':') {
				return nil, false
			}
			v, ok := p.num()
			if !ok {
				return nil, false
			}
			switch {
			case string(key) == "price" && !havePrice:
				l.Price, havePrice = v, true
			case string(key) == "size" && !haveSize:
				l.Size, haveSize = v, true
			default:
				return nil, false
			}
		}
		if !p.lit('}') {
			return nil, false
		}
		out = append(out, l)
		if p.lit(']') {
			return out, true
		}
		if !p.lit(',') {
			return nil, false
		}
	}
}
