package book

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
)

// The fast path of Decode: the market channel's frames in the forms
// upstream sends them, read without reflection (an archive import is tens
// of millions of frames, and encoding/json's reflection was three
// quarters of its time). It accepts only what encoding/json reads the
// same way: known keys spelled as sent (a key that differs from one only
// in case goes the general way, since encoding/json matches keys without
// regard to case), each once, strings without escapes, numbers in JSON's
// grammar, levels and changes as objects; unknown keys with scalar values
// are skipped, as encoding/json skips them. On anything else ok is false
// and the caller decodes the general way, which also reports errors.

type fastParser struct {
	b []byte
	i int
	// names, when set, interns ids and names (see Decoder).
	names map[string]string
	// changeMem holds the frame's price changes (see changes).
	changeMem []WireChange
}

// maxNames bounds a Decoder's interned names: when full it starts afresh
// (a collector runs for months, meeting new tokens every five minutes).
const maxNames = 1 << 14

// name returns b as a string, the one interned when names are.
func (p *fastParser) name(b []byte) string {
	if p.names == nil || len(b) == 0 {
		return string(b)
	}
	if s, ok := p.names[string(b)]; ok {
		return s
	}
	if len(p.names) >= maxNames {
		clear(p.names)
	}
	s := string(b)
	p.names[s] = s
	return s
}

func (p *fastParser) ws() {
	if p.i < len(p.b) && p.b[p.i] > ' ' {
		return // the common case, frames as sent: no space between tokens
	}
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *fastParser) lit(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *fastParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// str reads a string without escapes or control characters.
func (p *fastParser) str() ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	j := p.i + 1
	for j+8 <= len(p.b) && !stopIn(binary.LittleEndian.Uint64(p.b[j:])) {
		j += 8 // ids and hashes are long: eight bytes a step while none ends the run
	}
	for j < len(p.b) && !strStop[p.b[j]] {
		j++
	}
	if j >= len(p.b) || p.b[j] != '"' {
		return nil, false // escapes and non-ASCII: the general way checks them
	}
	s := p.b[p.i+1 : j]
	p.i = j + 1
	return s, true
}

// strStop are the bytes that end a string's plain run: its closing
// quote, and what str leaves to the general way (an escape, a control
// character, a byte of a non-ASCII character).
var strStop = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80
	}
	return t
}()

// stopIn reports whether any of the eight bytes of x is one of strStop's:
// a quote or a backslash (a byte that xor with it is zero), a control
// character (below 0x20) or a byte of 0x80 and over (its top bit set).
// Each term is the classic test for a zero byte, exact as to whether
// there is one (a borrow can only run on from a zero byte).
func stopIn(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - lo) & ^v & hi }
	return (zero(x^(lo*'"')) | zero(x^(lo*'\\')) | (x-lo*0x20)&^x&hi | x&hi) != 0
}

// number reads a number in JSON's grammar.
func (p *fastParser) number() ([]byte, bool) {
	p.ws()
	n := numberLen(p.b[p.i:])
	if n == 0 {
		return nil, false
	}
	s := p.b[p.i : p.i+n]
	p.i += n
	return s, true
}

// numberLen is the length of the JSON number b starts with, 0 if none.
func numberLen(b []byte) int {
	j := 0
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j >= len(b) {
		return 0
	}
	switch {
	case b[j] == '0':
		j++
	case b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return 0
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return 0
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return 0
		}
	}
	return j
}

func (p *fastParser) word(w string) bool {
	p.ws()
	if strings.HasPrefix(string(p.b[p.i:min(len(p.b), p.i+len(w))]), w) {
		p.i += len(w)
		return true
	}
	return false
}

// null reads null.
func (p *fastParser) null() bool { return p.peek() == 'n' && p.word("null") }

// skipScalar skips a string, number, true, false or null.
func (p *fastParser) skipScalar() bool {
	switch c := p.peek(); {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == 't':
		return p.word("true")
	case c == 'f':
		return p.word("false")
	case c == 'n':
		return p.word("null")
	default:
		_, ok := p.number()
		return ok
	}
}

// rawText reads a string, a number or null (nil) as its bytes.
func (p *fastParser) rawText() ([]byte, bool) {
	switch p.peek() {
	case '"':
		return p.str()
	case 'n':
		return nil, p.null()
	}
	return p.number()
}

// rawPlain reads a string or null (nil) as its bytes.
func (p *fastParser) rawPlain() ([]byte, bool) {
	if p.null() {
		return nil, true
	}
	return p.str()
}

// timestamp reads an event's timestamp: a count of milliseconds as
// upstream writes it (digits, the first not 0) into Millis, without a
// text of its own; any other form into Timestamp, for Check.
func (p *fastParser) timestamp(w *Wire) bool {
	s, ok := p.rawText()
	if !ok {
		return false
	}
	if len(s) == 0 || len(s) > 18 || s[0] == '0' { // 18 digits: no overflow
		w.Timestamp = Text(s)
		return true
	}
	var ms int64
	for _, c := range s {
		if c < '0' || c > '9' {
			w.Timestamp = Text(s)
			return true
		}
		ms = ms*10 + int64(c-'0')
	}
	w.Millis = ms
	return true
}

// plain reads a string field: a string or null.
func (p *fastParser) plain(dst *string) bool {
	s, ok := p.rawPlain()
	*dst = string(s)
	return ok
}

// plainName is plain for a field whose values repeat (an event type, a
// side, a condition id): interned.
func (p *fastParser) plainName(dst *string) bool {
	s, ok := p.rawPlain()
	*dst = p.name(s)
	return ok
}

// textName is text for an id that repeats (a token id): interned.
func (p *fastParser) textName(dst *Text) bool {
	s, ok := p.rawText()
	*dst = Text(p.name(s))
	return ok
}

// num reads a Num: a number, a string holding one, "" or null.
func (p *fastParser) num(dst *Num) bool {
	switch p.peek() {
	case 'n':
		*dst = Num{}
		return p.null()
	case '"':
		s, ok := p.str()
		if !ok {
			return false
		}
		if len(s) > 0 && (s[0] <= ' ' || s[len(s)-1] <= ' ') {
			s = bytes.TrimSpace(s) // str's bytes are ASCII: its spaces are at most ' '
		}
		if len(s) == 0 {
			*dst = Num{}
			return true
		}
		return finite(s, dst)
	}
	s, ok := p.number()
	return ok && finite(s, dst)
}

// finite reads s as ParseNum does (a finite number), into dst, without
// keeping s: a frame's numbers cost no allocation.
func finite(s []byte, dst *Num) bool {
	v, ok := parseFinite(s)
	if ok {
		*dst = Num{V: v, Set: true}
	}
	return ok
}

// parseFinite is strconv.ParseFloat(s, 64) for a finite number, ok false
// for anything else. The numbers of the market channel, a few digits
// either side of a point ("0.52", "1530.25"), are read here: their digits
// make an integer below 2⁵³ and a power of ten up to 10²², both exact in
// a float64, whose quotient IEEE division rounds correctly, as ParseFloat
// rounds (its own exact case, without its detours for every other form).
// Any other text goes to ParseFloat.
func parseFinite(s []byte) (float64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		i, neg = 1, true
	}
	var mant uint64
	digits, frac, point := 0, 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if point {
				frac++
			}
		case c == '.' && !point:
			point = true
		default:
			digits = 0 // anything else: ParseFloat's
			i = len(s)
		}
	}
	if digits == 0 || digits > 15 { // 15 digits: below 10¹⁵ < 2⁵³, and a point among them at most 10¹⁵ too
		v, err := strconv.ParseFloat(string(s), 64)
		return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	v := float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// list reads a JSON list or null into dst, each element by item. With
// mem set the elements are appended to *mem, whose memory dst then shares
// (clipped, so that an append to dst copies): a frame's lists that live
// only while it is checked take no memory of their own.
func list[T any](p *fastParser, dst *[]T, mem *[]T, item func() (T, bool)) bool {
	if p.null() {
		*dst = nil
		return true
	}
	if !p.lit('[') {
		return false
	}
	var buf []T
	if mem != nil {
		buf = *mem
	}
	start := len(buf)
	if !p.lit(']') {
		for {
			v, ok := item()
			if !ok {
				return false
			}
			buf = append(buf, v)
			if p.lit(',') {
				continue
			}
			if p.lit(']') {
				break
			}
			return false
		}
	}
	if mem != nil {
		*mem = buf
	}
	*dst = buf[start:len(buf):len(buf)]
	if len(*dst) == 0 {
		*dst = []T{} // as encoding/json reads [] (and buf may be nil)
	}
	return true
}

// levels reads a list of levels or null.
func (p *fastParser) levels(dst *[]Level) bool {
	return list(p, dst, nil, p.level) // the event keeps them
}

// level reads one {"price", "size"} level.
func (p *fastParser) level() (Level, bool) {
	p.ws()
	start := p.i
	end := bytes.IndexByte(p.b[start:], '}')
	if end < 0 {
		return Level{}, false
	}
	price, size, ok := FastLevel(p.b[start : start+end+1])
	if !ok {
		return Level{}, false
	}
	p.i = start + end + 1
	return Level{Price: price, Size: size}, true
}

// changes reads a list of price changes or null, into the parser's
// memory of changes: Check copies them into the event.
func (p *fastParser) changes(dst *[]WireChange) bool {
	return list(p, dst, &p.changeMem, p.change)
}

// change reads one price change object.
func (p *fastParser) change() (WireChange, bool) {
	var c WireChange
	if !p.lit('{') {
		return c, false
	}
	if p.lit('}') {
		return c, true
	}
	var seen uint8
	for {
		key, ok := p.str()
		if !ok || !p.lit(':') {
			return c, false
		}
		var bit uint8
		switch string(key) {
		case "asset_id":
			bit, ok = 1, p.textName(&c.AssetID)
		case "price":
			bit, ok = 2, p.num(&c.Price)
		case "size":
			bit, ok = 4, p.num(&c.Size)
		case "side":
			bit, ok = 8, p.plainName(&c.Side)
		case "best_bid":
			bit, ok = 16, p.num(&c.BestBid)
		case "best_ask":
			bit, ok = 32, p.num(&c.BestAsk)
		default:
			if foldsTo(key, "asset_id", "price", "size", "side", "best_bid", "best_ask") {
				return c, false
			}
			ok = p.skipScalar()
		}
		if !ok || seen&bit != 0 {
			return c, false
		}
		seen |= bit
		if p.lit(',') {
			continue
		}
		if p.lit('}') {
			return c, true
		}
		return c, false
	}
}

// wireKeys are the keys of Wire the fast path reads.
var wireKeys = []string{"event_type", "market", "timestamp", "asset_id", "size", "side", "fee_rate_bps", "transaction_hash",
	"old_tick_size", "new_tick_size", "tick_size", "best_bid", "best_ask", "bids", "asks", "buys", "sells",
	"last_trade_price", "price", "price_changes", "changes",
	// Read the general way: the fast path bails on them.
	"id", "slug", "assets_ids", "clob_token_ids", "outcomes", "winning_asset_id", "winning_outcome", "fee_schedule"}

func foldsTo(key []byte, keys ...string) bool {
	for _, k := range keys {
		// A key str read is ASCII, which folds only to keys of its length.
		if len(key) == len(k) && strings.EqualFold(string(key), k) {
			return true
		}
	}
	return false
}

// fastWire reads one event object.
func (p *fastParser) wire(w *Wire) bool {
	if !p.lit('{') {
		return false
	}
	var seen uint32
	if p.lit('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.lit(':') {
			return false
		}
		var bit uint32
		switch string(key) {
		case "event_type":
			bit, ok = 1<<0, p.plainName(&w.EventType)
		case "market":
			bit, ok = 1<<1, p.plainName(&w.Market)
		case "timestamp":
			bit, ok = 1<<2, p.timestamp(w)
		case "asset_id":
			bit, ok = 1<<3, p.textName(&w.AssetID)
		case "size":
			bit, ok = 1<<4, p.num(&w.Size)
		case "side":
			bit, ok = 1<<5, p.plainName(&w.Side)
		case "fee_rate_bps":
			bit, ok = 1<<6, p.num(&w.FeeRateBps)
		case "transaction_hash":
			bit, ok = 1<<7, p.plain(&w.TxHash)
		case "old_tick_size":
			bit, ok = 1<<8, p.num(&w.OldTickSize)
		case "new_tick_size":
			bit, ok = 1<<9, p.num(&w.NewTickSize)
		case "tick_size":
			bit, ok = 1<<10, p.num(&w.TickSize)
		case "best_bid":
			bit, ok = 1<<11, p.num(&w.BestBid)
		case "best_ask":
			bit, ok = 1<<12, p.num(&w.BestAsk)
		case "bids":
			bit, ok = 1<<13, p.levels(&w.Bids)
		case "asks":
			bit, ok = 1<<14, p.levels(&w.Asks)
		case "buys":
			bit, ok = 1<<15, p.levels(&w.Buys)
		case "sells":
			bit, ok = 1<<16, p.levels(&w.Sells)
		case "last_trade_price":
			bit, ok = 1<<17, p.num(&w.LastTradePrice)
		case "price":
			bit, ok = 1<<18, p.num(&w.Price)
		case "price_changes":
			bit, ok = 1<<19, p.changes(&w.PriceChanges)
		case "changes":
			bit, ok = 1<<20, p.changes(&w.Changes)
		default:
			if foldsTo(key, wireKeys...) {
				return false
			}
			ok = p.skipScalar()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if p.lit(',') {
			continue
		}
		if p.lit('}') {
			return true
		}
		return false
	}
}

// fastDecode reads a frame of one event object or an array of them.
func fastDecode(data []byte) ([]Wire, bool) {
	var d Decoder
	return d.fastDecode(data)
}

// fastDecode is the package's fastDecode into d's memory, which the wires
// returned share until the next call, interning names in d.names when it
// is not nil.
func (d *Decoder) fastDecode(data []byte) ([]Wire, bool) {
	p := fastParser{b: data, names: d.names, changeMem: d.changes[:0]}
	out, ok := p.frame(d.wires[:0])
	d.wires, d.changes = out[:0], p.changeMem[:0]
	return out, ok
}

// frame reads the frame: one event object or an array of them, into out.
func (p *fastParser) frame(out []Wire) ([]Wire, bool) {
	if out == nil {
		out = []Wire{}
	}
	switch p.peek() {
	case '{':
		out = append(out, Wire{})
		if !p.wire(&out[0]) {
			return out, false
		}
	case '[':
		p.i++
		if !p.lit(']') {
			for {
				out = append(out, Wire{})
				if !p.wire(&out[len(out)-1]) {
					return out, false
				}
				if p.lit(',') {
					continue
				}
				if p.lit(']') {
					break
				}
				return out, false
			}
		}
	default:
		return out, false
	}
	p.ws()
	return out, p.i == len(p.b)
}
