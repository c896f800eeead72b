package sweep

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/stats"
)

// A shard's results are stored in a compact binary form: a sweep's last
// shard reads every other shard's back to summarize the sweep, and as JSON
// that decoding cost more than the replays themselves (100 trials × 40
// markets: 0.55 s of JSON against 0.15 s of engine). The form is this
// package's alone; the store keeps it as opaque bytes.
//
// Layout (version 2), integers as varints, floats as their 8 IEEE-754
// bytes little-endian (exact, NaN and infinities included):
//
//	0x02, uvarint trials, then per trial:
//	  uvarint flags (shardPerf, shardError, and one bit per optional
//	    Performance field that is set)
//	  [error: uvarint length, bytes]
//	  [performance: the float fields, the int fields, FinalMarketOutcome
//	    (uvarint length, bytes), then each optional field that is set]
//	  the round trips' sums: uvarint N (0: none, and nothing follows),
//	    Mean, M2, SumSq, SqErrEntry, SqErrMid, then per calibration
//	    bucket uvarint N, Price, Won
//
// Version 1 ended a trial with its round trips themselves (uvarint
// trips, 5 floats each), and an earlier version stored JSON with them:
// both still decode (a sweep running across an upgrade), the trips added
// up as they are read.
const (
	shardFormatV1 = 0x01
	shardFormatV2 = 0x02
)

const (
	shardPerf = 1 << iota
	shardError
	shardTradeEvents
	shardOrdersPlaced
	shardOrdersFilled
	shardOrdersRejected
	shardOrdersCancelled
	shardOrdersExpired
	shardMakerRebates
)

// maxShardString bounds a decoded string (an error code, an outcome).
const maxShardString = 1 << 10

// EncodeShard is a shard's results in the stored form.
func EncodeShard(out []TrialMarket) []byte {
	size := 16
	for i := range out {
		size += 160 + len(out[i].Error)
		if out[i].Sums != nil {
			size += 5*8 + 10*17
		}
	}
	b := make([]byte, 0, size)
	b = append(b, shardFormatV2)
	b = binary.AppendUvarint(b, uint64(len(out)))
	for i := range out {
		b = appendTrial(b, &out[i])
	}
	return b
}

func appendTrial(b []byte, t *TrialMarket) []byte {
	var flags uint64
	p := t.Performance
	if t.Error != "" {
		flags |= shardError
	}
	if p != nil {
		flags |= shardPerf
		for _, o := range optionalInts(p) {
			if *o.v != nil {
				flags |= o.bit
			}
		}
		if p.TotalMakerRebates != nil {
			flags |= shardMakerRebates
		}
	}
	b = binary.AppendUvarint(b, flags)
	if t.Error != "" {
		b = appendString(b, t.Error)
	}
	if p != nil {
		for _, f := range [...]float64{p.TotalPnL, p.TotalPnLPercent, p.TotalFees, p.MaxDrawdown, p.MaxDrawdownPercent,
			p.WinRate, p.AvgTradePnL, p.BestTrade, p.WorstTrade, p.TimeInPositionPct} {
			b = appendFloat(b, f)
		}
		for _, n := range [...]int{p.TotalTrades, p.WinningTrades, p.LosingTrades} {
			b = binary.AppendVarint(b, int64(n))
		}
		b = appendString(b, p.FinalMarketOutcome)
		for _, o := range optionalInts(p) {
			if *o.v != nil {
				b = binary.AppendVarint(b, int64(**o.v))
			}
		}
		if p.TotalMakerRebates != nil {
			b = appendFloat(b, *p.TotalMakerRebates)
		}
	}
	sm := t.Sums
	if sm == nil || sm.N == 0 {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(sm.N))
	for _, f := range [...]float64{sm.Mean, sm.M2, sm.SumSq, sm.SqErrEntry, sm.SqErrMid} {
		b = appendFloat(b, f)
	}
	for _, k := range sm.Buckets {
		b = binary.AppendUvarint(b, uint64(k.N))
		b = appendFloat(b, k.Price)
		b = appendFloat(b, k.Won)
	}
	return b
}

// optionalInts is p's optional integer fields with their flags, in the
// stored order.
func optionalInts(p *replay.Performance) [6]struct {
	bit uint64
	v   **int
} {
	return [6]struct {
		bit uint64
		v   **int
	}{{shardTradeEvents, &p.TradeEvents}, {shardOrdersPlaced, &p.OrdersPlaced}, {shardOrdersFilled, &p.OrdersFilled},
		{shardOrdersRejected, &p.OrdersRejected}, {shardOrdersCancelled, &p.OrdersCancelled}, {shardOrdersExpired, &p.OrdersExpired}}
}

func appendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errShardTruncated is stored results that end too soon.
var errShardTruncated = errors.New("truncated")

// DecodeShard reads a shard's stored results: the binary form, or JSON as
// an earlier version stored it.
func DecodeShard(b []byte) ([]TrialMarket, error) {
	if len(b) > 0 && b[0] != shardFormatV1 && b[0] != shardFormatV2 {
		// JSON, with the round trips themselves.
		var old []struct {
			TrialMarket
			Trips []Trip `json:"trips"`
		}
		if err := json.Unmarshal(b, &old); err != nil {
			return nil, fmt.Errorf("shard results: neither the binary form nor JSON: %w", err)
		}
		out := make([]TrialMarket, len(old))
		for i, t := range old {
			out[i] = t.TrialMarket
			if out[i].Sums == nil {
				out[i].Sums = replay.SumTrips(t.Trips)
			}
		}
		return out, nil
	}
	d := shardDecoder{b: b}
	if len(b) == 0 {
		return nil, fmt.Errorf("shard results: empty")
	}
	d.version = b[0]
	d.b = d.b[1:]
	n := d.uvarint()
	// Every trial takes at least two bytes (its flags and its trips).
	if d.err == nil && n > uint64(len(d.b))/2 {
		d.err = fmt.Errorf("%d trials in %d bytes: %w", n, len(d.b), errShardTruncated)
	}
	if d.err != nil {
		return nil, fmt.Errorf("shard results: %w", d.err)
	}
	out := make([]TrialMarket, n)
	var perfs []replay.Performance // one allocation for every trial's
	for i := range out {
		d.trial(&out[i], &perfs, int(n)-i)
		if d.err != nil {
			return nil, fmt.Errorf("shard results: trial %d: %w", i, d.err)
		}
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("shard results: %d bytes after the last trial", len(d.b))
	}
	return out, nil
}

// shardDecoder reads the binary form; the first error sticks.
type shardDecoder struct {
	b       []byte
	version byte
	err     error
}

func (d *shardDecoder) trial(t *TrialMarket, perfs *[]replay.Performance, left int) {
	flags := d.uvarint()
	if flags >= shardMakerRebates<<1 {
		d.fail(fmt.Errorf("unknown flags %#x", flags))
	}
	if flags&shardError != 0 {
		t.Error = d.string()
	}
	if flags&shardPerf != 0 {
		if cap(*perfs) == len(*perfs) {
			*perfs = make([]replay.Performance, 0, left)
		}
		*perfs = append(*perfs, replay.Performance{})
		p := &(*perfs)[len(*perfs)-1]
		for _, f := range [...]*float64{&p.TotalPnL, &p.TotalPnLPercent, &p.TotalFees, &p.MaxDrawdown, &p.MaxDrawdownPercent,
			&p.WinRate, &p.AvgTradePnL, &p.BestTrade, &p.WorstTrade, &p.TimeInPositionPct} {
			*f = d.float()
		}
		for _, n := range [...]*int{&p.TotalTrades, &p.WinningTrades, &p.LosingTrades} {
			*n = d.int()
		}
		p.FinalMarketOutcome = d.string()
		for _, o := range optionalInts(p) {
			if flags&o.bit != 0 {
				v := d.int()
				*o.v = &v
			}
		}
		if flags&shardMakerRebates != 0 {
			v := d.float()
			p.TotalMakerRebates = &v
		}
		t.Performance = p
	} else if flags&^(shardPerf|shardError) != 0 {
		d.fail(fmt.Errorf("flags %#x: optional performance fields without a performance", flags))
	}
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return
	}
	if d.version == shardFormatV1 {
		// The round trips themselves, added up as they are read.
		if n > uint64(len(d.b))/40 {
			d.fail(fmt.Errorf("%d trips in %d bytes: %w", n, len(d.b), errShardTruncated))
			return
		}
		var sm stats.TradeSums
		for range n {
			fill, mid, pnl, _, won := d.float(), d.float(), d.float(), d.float(), d.float()
			sm.AddTrade(stats.Trade{PnL: pnl, EntryPrice: fill, EntryMid: mid, Won: won})
		}
		t.Sums = &sm
		return
	}
	if n > math.MaxInt32 {
		d.fail(fmt.Errorf("%d round trips", n))
		return
	}
	sm := &stats.TradeSums{N: int(n)}
	for _, f := range [...]*float64{&sm.Mean, &sm.M2, &sm.SumSq, &sm.SqErrEntry, &sm.SqErrMid} {
		*f = d.float()
	}
	for k := range sm.Buckets {
		bn := d.uvarint()
		if bn > n {
			d.fail(fmt.Errorf("a calibration bucket of %d entries among %d round trips", bn, n))
			return
		}
		sm.Buckets[k] = stats.BucketSums{N: int(bn), Price: d.float(), Won: d.float()}
	}
	t.Sums = sm
}

func (d *shardDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *shardDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(fmt.Errorf("a count: %w", errShardTruncated))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *shardDecoder) int() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 || v != int64(int(v)) {
		d.fail(fmt.Errorf("an integer: %w", errShardTruncated))
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *shardDecoder) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail(fmt.Errorf("a number: %w", errShardTruncated))
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return f
}

func (d *shardDecoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > maxShardString || n > uint64(len(d.b)) {
		d.fail(fmt.Errorf("a string of %d bytes in %d: %w", n, len(d.b), errShardTruncated))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
