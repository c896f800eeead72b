package book

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Event is one event of the market channel, checked and normalised: the
// older shapes (buys/sells for bids/asks, a price_change's changes with
// its asset_id on the event, the flat 2024 form) read as the current ones.
type Event struct {
	EventType      string
	Market         string // the condition id, when the event names it
	AssetID        string
	Bids, Asks     []Level
	LastTradePrice Num
	Price          Num // of a last_trade_price event
	Changes        []Change
	Time           time.Time // the event's timestamp, when it has one

	Trade   Trade    // last_trade_price
	NewTick float64  // tick_size_change
	Tick    float64  // book: the tick_size it says the market trades in (0: none)
	Slug    string   // new_market
	Tokens  []string // new_market, market_resolved: the market's tokens
	Fees    *Fees    // new_market's fee schedule
	// Winner is market_resolved's winning token.
	Winner string
}

// Change is one level a price_change sets.
type Change struct {
	AssetID          string
	Price, Size      Num
	Side             string // BUY (a bid) or SELL (an ask)
	BestBid, BestAsk Num
}

// Trade is a last_trade_price event.
type Trade struct {
	Time       time.Time
	Price      float64
	Size       float64
	Side       string
	FeeRateBps float64
	TxHash     string
}

// Fees is new_market's fee_schedule.
type Fees struct {
	Rate, Exponent Num
	TakerOnly      bool
	RebateRate     Num
}

// Wire is an event as the market channel spells it. Readers of other
// encodings of the same events (the PMXT archive's columns) fill one and
// Check it, so that every source is checked alike.
type Wire struct {
	EventType string `json:"event_type"`
	Market    string `json:"market"`
	Timestamp Text   `json:"timestamp"`
	// Millis, when positive, is the timestamp in epoch milliseconds, read
	// in place of Timestamp: a reader that has the number (the fast path,
	// the PMXT archive's column) sets it rather than spell it out for
	// Check to parse back.
	Millis         int64        `json:"-"`
	AssetID        Text         `json:"asset_id"`
	Size           Num          `json:"size"`
	Side           string       `json:"side"`
	FeeRateBps     Num          `json:"fee_rate_bps"`
	TxHash         string       `json:"transaction_hash"`
	OldTickSize    Num          `json:"old_tick_size"`
	NewTickSize    Num          `json:"new_tick_size"`
	TickSize       Num          `json:"tick_size"`
	BestBid        Num          `json:"best_bid"`
	BestAsk        Num          `json:"best_ask"`
	ID             Text         `json:"id"`
	Slug           string       `json:"slug"`
	AssetsIDs      []Text       `json:"assets_ids"`
	ClobTokenIDs   []Text       `json:"clob_token_ids"`
	Outcomes       []string     `json:"outcomes"`
	WinningAssetID Text         `json:"winning_asset_id"`
	WinningOutcome string       `json:"winning_outcome"`
	FeeSchedule    *WireFees    `json:"fee_schedule"`
	Bids           []Level      `json:"bids"`
	Asks           []Level      `json:"asks"`
	Buys           []Level      `json:"buys"`
	Sells          []Level      `json:"sells"`
	LastTradePrice Num          `json:"last_trade_price"`
	Price          Num          `json:"price"`
	PriceChanges   []WireChange `json:"price_changes"`
	Changes        []WireChange `json:"changes"`
}

// WireFees is new_market's fee_schedule: snake_case, string numbers.
type WireFees struct {
	Rate       Num  `json:"rate"`
	Exponent   Num  `json:"exponent"`
	TakerOnly  Bool `json:"taker_only"`
	RebateRate Num  `json:"rebate_rate"`
}

// WireChange is one entry of a price_change's price_changes.
type WireChange struct {
	AssetID Text   `json:"asset_id"`
	Price   Num    `json:"price"`
	Size    Num    `json:"size"`
	Side    string `json:"side"`
	BestBid Num    `json:"best_bid"`
	BestAsk Num    `json:"best_ask"`
}

// Bool is a JSON boolean or a string "true"/"false".
type Bool bool

// UnmarshalJSON reads true, false, "true", "false", "1", "0" or "".
func (f *Bool) UnmarshalJSON(b []byte) error {
	var s Text
	if err := s.UnmarshalJSON(b); err != nil {
		var v bool
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*f = Bool(v)
		return nil
	}
	switch strings.ToLower(strings.TrimSpace(string(s))) {
	case "true", "1":
		*f = true
	case "false", "0", "":
		*f = false
	default:
		return fmt.Errorf("want a boolean, got %q", s)
	}
	return nil
}

// Decode reads one message of the market channel: PONG, one event, or an
// array of them. It checks what the books rely on and fails the whole
// message otherwise: a change applied halfway would leave a wrong book.
func Decode(data []byte) ([]Event, error) {
	return DecodeAppend(nil, data)
}

// DecodeAppend is Decode appending to out, for readers that reuse a slice.
func DecodeAppend(out []Event, data []byte) ([]Event, error) {
	var d Decoder
	return d.decodeAppend(out, data, nil) // no slab: a frame's changes get their own memory
}

// A Decoder decodes frames as Decode does, keeping for the next frame what
// one frame's decoding needs only while it decodes, and the ids and names
// that repeat frame after frame (token and condition ids, event types,
// sides), so that a reader of millions of frames does not allocate them
// again each time. The zero Decoder is ready; it is not safe for
// concurrent use.
type Decoder struct {
	wires   []Wire
	changes []WireChange // the wires' price changes
	names   map[string]string
	// slab is where the events' changes are carved from, each event's
	// clipped to its own: a new array when it is full, so that a change
	// costs no allocation of its own and none is ever written again.
	slab []Change
}

// slabChanges is how many changes an array of a Decoder's slab holds.
const slabChanges = 512

// DecodeAppend is Decode appending to out.
func (d *Decoder) DecodeAppend(out []Event, data []byte) ([]Event, error) {
	if d.names == nil {
		d.names = map[string]string{}
	}
	return d.decodeAppend(out, data, &d.slab)
}

// decodeAppend is DecodeAppend carving the events' changes from slab when
// it is set (see check).
func (d *Decoder) decodeAppend(out []Event, data []byte, slab *[]Change) ([]Event, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return out, fmt.Errorf("%w: empty websocket message", ErrMalformed)
	}
	if string(data) == "PONG" {
		return out, nil
	}
	raw, ok := d.fastDecode(data)
	if !ok {
		var err error
		if raw, err = slowDecode(data); err != nil {
			return out, err
		}
	}
	n := len(out)
	for i := range raw {
		e, err := raw[i].check(slab)
		if err != nil {
			return out[:n], err
		}
		out = append(out, e)
	}
	return out, nil
}

// slowDecode reads a frame with encoding/json: every form it accepts, and
// the errors.
func slowDecode(data []byte) ([]Wire, error) {
	var raw []Wire
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("%w: websocket message: %w", ErrMalformed, err)
		}
	case '{':
		var e Wire
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("%w: websocket message: %w", ErrMalformed, err)
		}
		raw = []Wire{e}
	default:
		s := data
		if len(s) > 200 {
			s = s[:200]
		}
		return nil, fmt.Errorf("%w: websocket message %q", ErrMalformed, s)
	}
	return raw, nil
}

// Check validates the event and returns it normalised.
func (r *Wire) Check() (Event, error) {
	return r.check(nil)
}

// millis reads a timestamp as upstream writes it, a count of milliseconds
// since the epoch: digits, or a number whose value is whole (1.7e12,
// 1703875201000.0: JSON has no integers, and a writer may spell one so).
func millis(ts string) (int64, bool) {
	if ms, err := strconv.ParseInt(ts, 10, 64); err == nil {
		return ms, ms > 0
	}
	f, err := strconv.ParseFloat(ts, 64)
	if err != nil || !(f > 0 && f < 1<<53) || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

// placesChanges reports whether events of the type change a book, its
// trades or its tick at their time (and so must have a readable one).
func placesChanges(eventType string) bool {
	switch eventType {
	case "book", "price_change", "last_trade_price", "tick_size_change":
		return true
	}
	return false
}

// check is Check, the event's changes carved from *slab when it is set
// (see Decoder).
func (r *Wire) check(slab *[]Change) (Event, error) {
	e := Event{EventType: r.EventType, Market: r.Market, AssetID: string(r.AssetID)}
	if r.Millis > 0 {
		e.Time = time.UnixMilli(r.Millis).UTC()
	} else if ts := strings.TrimSpace(string(r.Timestamp)); ts != "" {
		ms, ok := millis(ts)
		switch {
		case ok:
			e.Time = time.UnixMilli(ms).UTC()
		case placesChanges(r.EventType):
			// A time that is there must be one: read as none, the book
			// change would take the time of the event before it. Other
			// events (best_bid_ask, new_market, another channel's) place
			// nothing, and a time they spell otherwise is let be.
			return e, malformed("timestamp", "timestamp %.40q is not a count of milliseconds since the epoch", ts)
		}
	}
	switch r.EventType {
	case "book":
		if e.AssetID == "" {
			return e, malformed("asset_id", "book event without asset_id")
		}
		e.Bids, e.Asks = r.Bids, r.Asks
		if e.Bids == nil && e.Asks == nil {
			e.Bids, e.Asks = r.Buys, r.Sells
		}
		for _, l := range e.Bids {
			if err := CheckLevel(l.Price, l.Size); err != nil {
				return e, fmt.Errorf("book of %s: %w", e.AssetID, err)
			}
		}
		for _, l := range e.Asks {
			if err := CheckLevel(l.Price, l.Size); err != nil {
				return e, fmt.Errorf("book of %s: %w", e.AssetID, err)
			}
		}
		if r.LastTradePrice.Set && r.LastTradePrice.V > 0 && r.LastTradePrice.V <= 1 {
			e.LastTradePrice = r.LastTradePrice
		}
		if r.TickSize.Set && r.TickSize.V > 0 && r.TickSize.V < 1 {
			e.Tick = r.TickSize.V
		}
	case "price_change":
		list := r.PriceChanges
		if len(r.Changes) > 0 {
			list = slices.Concat(r.PriceChanges, r.Changes)
		}
		if len(list) == 0 && r.Price.Set {
			// The flat 2024 form: one change on the event itself.
			list = []WireChange{{AssetID: r.AssetID, Price: r.Price, Size: r.Size, Side: r.Side}}
		}
		switch n := len(list); {
		case n > 0 && slab != nil:
			if cap(*slab)-len(*slab) < n {
				*slab = make([]Change, 0, max(slabChanges, n))
			}
			at := len(*slab)
			e.Changes = (*slab)[at : at : at+n]
			defer func() { *slab = (*slab)[:at+len(e.Changes)] }() // what was kept
		case n > 0:
			e.Changes = make([]Change, 0, n)
		}
		for _, c := range list {
			ch := Change{AssetID: cmp.Or(string(c.AssetID), e.AssetID), Price: c.Price, Size: c.Size, BestBid: c.BestBid, BestAsk: c.BestAsk}
			switch strings.ToUpper(c.Side) {
			case "BUY":
				ch.Side = "BUY"
			case "SELL":
				ch.Side = "SELL"
			default:
				return e, malformed("side", "price_change of side %q", c.Side)
			}
			if ch.AssetID == "" {
				return e, malformed("asset_id", "price_change without asset_id")
			}
			if err := CheckLevel(c.Price, c.Size); err != nil {
				return e, fmt.Errorf("price_change of %s: %w", ch.AssetID, err)
			}
			e.Changes = append(e.Changes, ch)
		}
	case "last_trade_price":
		e.Price = r.Price
		switch {
		case e.AssetID == "":
			return e, malformed("asset_id", "last_trade_price without asset_id")
		case !r.Price.Set || r.Price.V <= 0 || r.Price.V >= 1:
			return e, malformed("price", "last_trade_price of %q at %v × %v: the price is outside (0, 1)", e.AssetID, r.Price.V, r.Size.V)
		case r.Size.V < 0:
			return e, malformed("size", "last_trade_price of %q at %v × %v: the size is negative", e.AssetID, r.Price.V, r.Size.V)
		}
		side := strings.ToUpper(r.Side)
		if side != "BUY" && side != "SELL" {
			side = ""
		}
		e.Trade = Trade{Time: e.Time, Price: r.Price.V, Size: r.Size.V, Side: side, FeeRateBps: r.FeeRateBps.V, TxHash: r.TxHash}
	case "tick_size_change":
		switch {
		case e.AssetID == "":
			return e, malformed("asset_id", "tick_size_change without asset_id")
		case !r.NewTickSize.Set || r.NewTickSize.V <= 0 || r.NewTickSize.V >= 1:
			return e, malformed("new_tick_size", "tick_size_change of %q to %v", e.AssetID, r.NewTickSize.V)
		}
		e.NewTick = r.NewTickSize.V
	case "new_market":
		e.Slug = r.Slug
		e.Tokens = texts(r.ClobTokenIDs)
		if len(e.Tokens) == 0 {
			e.Tokens = texts(r.AssetsIDs)
		}
		if r.FeeSchedule != nil {
			e.Fees = &Fees{Rate: r.FeeSchedule.Rate, Exponent: r.FeeSchedule.Exponent, TakerOnly: bool(r.FeeSchedule.TakerOnly), RebateRate: r.FeeSchedule.RebateRate}
		}
	case "market_resolved":
		e.Tokens = texts(r.AssetsIDs)
		e.Winner = string(r.WinningAssetID)
	}
	return e, nil
}

func texts(in []Text) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
