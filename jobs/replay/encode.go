package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/updown/updown/jobs/jsonenc"
)

// AppendJSON appends r as json.Marshal writes it, byte for byte (and
// fails where it fails, in the summaries: the lists hold only finite
// numbers and strings), without
// reflection over the trades and the curve: a 24hr replay that trades
// often answers megabytes, which encoding/json writes several times
// slower. The small summaries go through encoding/json as they are.
func (r Result) AppendJSON(b []byte) ([]byte, error) {
	// Sized once: regrowing megabytes by a quarter at a time costs more
	// than writing them (a trade takes about 200 bytes, a point 150).
	b = slices.Grow(b, 1024+224*len(r.Trades)+160*len(r.PnLCurve))
	b = append(b, `{"market":`...)
	var err error
	if b, err = appendMarshal(b, r.Market); err != nil {
		return nil, err
	}
	b = append(b, `,"strategy":`...)
	if b, err = appendMarshal(b, r.Strategy); err != nil {
		return nil, err
	}
	b = append(b, `,"performance":`...)
	if b, err = appendMarshal(b, r.Performance); err != nil {
		return nil, err
	}
	b = append(b, `,"trades":`...)
	b = appendList(b, r.Trades, (*TradeEvent).appendJSON)
	b = append(b, `,"pnl_curve":`...)
	b = appendList(b, r.PnLCurve, (*EquityPoint).appendJSON)
	b = append(b, `,"total_snapshots":`...)
	b = strconv.AppendInt(b, int64(r.TotalSnapshots), 10)
	if r.Orders != nil { // a GTC strategy's, [] when it placed none
		b = append(b, `,"orders":`...)
		if b, err = appendMarshal(b, r.Orders); err != nil {
			return nil, err
		}
	}
	if len(r.Warnings) > 0 {
		b = append(b, `,"warnings":`...)
		if b, err = appendMarshal(b, r.Warnings); err != nil {
			return nil, err
		}
	}
	if r.TradesTruncated {
		b = append(b, `,"trades_truncated":true`...)
	}
	if r.OrdersTruncated {
		b = append(b, `,"orders_truncated":true`...)
	}
	return append(b, '}'), nil
}

// appendList appends xs as a JSON array, each element by appendOne; nil
// as null, as encoding/json writes a nil slice.
func appendList[T any](b []byte, xs []T, appendOne func(*T, []byte) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOne(&xs[i], b)
	}
	return append(b, ']')
}

// appendMarshal appends json.Marshal(v) of a summary.
func appendMarshal(b []byte, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode replay result: %w", err)
	}
	return append(b, raw...), nil
}

func (t *TradeEvent) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = jsonenc.AppendStringHTML(b, t.Type)
	b = append(b, `,"reason":`...)
	b = jsonenc.AppendStringHTML(b, t.Reason)
	b = append(b, `,"time":`...)
	b = jsonenc.AppendStringHTML(b, t.Time)
	b = append(b, `,"price":`...)
	b = jsonenc.AppendFloat(b, t.Price)
	b = append(b, `,"fill_price":`...)
	b = jsonenc.AppendFloat(b, t.FillPrice)
	b = append(b, `,"shares":`...)
	b = jsonenc.AppendFloat(b, t.Shares)
	b = append(b, `,"slippage":`...)
	b = jsonenc.AppendFloat(b, t.Slippage)
	b = append(b, `,"fee":`...)
	b = jsonenc.AppendFloat(b, t.Fee)
	b = append(b, `,"position_pnl":`...)
	b = jsonenc.AppendFloat(b, t.PositionPnL)
	b = append(b, `,"cumulative_pnl":`...)
	b = jsonenc.AppendFloat(b, t.CumulativePnL)
	b = append(b, `,"coin_price":`...)
	b = jsonenc.AppendFloat(b, t.CoinPrice)
	if t.Liquidity != "" {
		b = append(b, `,"liquidity":`...)
		b = jsonenc.AppendStringHTML(b, t.Liquidity)
	}
	if t.MakerRebate != nil {
		b = append(b, `,"maker_rebate":`...)
		b = jsonenc.AppendFloat(b, *t.MakerRebate)
	}
	return append(b, '}')
}

func (p *EquityPoint) appendJSON(b []byte) []byte {
	b = append(b, `{"time":`...)
	b = jsonenc.AppendStringHTML(b, p.Time)
	b = append(b, `,"pnl":`...)
	b = jsonenc.AppendFloat(b, p.PnL)
	b = append(b, `,"unrealized_pnl":`...)
	b = jsonenc.AppendFloat(b, p.UnrealizedPnL)
	b = append(b, `,"price":`...)
	b = jsonenc.AppendFloat(b, p.Price)
	b = append(b, `,"coin_price":`...)
	b = jsonenc.AppendFloat(b, p.CoinPrice)
	b = append(b, `,"in_position":`...)
	b = strconv.AppendBool(b, p.InPosition)
	return append(b, '}')
}
