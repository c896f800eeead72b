package transfer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store/memory"
)

// TestImportJSONLNonFiniteSaysSo: a JSON Lines snapshot with NaN, an
// infinity (as Python's json and pandas write them) or a number too large
// for a float is refused naming the line, the field and that it is not a
// finite number, where the error was JSON's "invalid character 'N'" or
// Go's "cannot unmarshal number 1e999 into Go struct field jsonLine...".
func TestImportJSONLNonFiniteSaysSo(t *testing.T) {
	t.Parallel()
	market := `{"type":"market","slug":"btc-updown-15m-1772366400","market_id":"1","coin":"BTC","market_type":"15m",` +
		`"start_time":"2026-03-01T12:00:00Z","end_time":"2026-03-01T12:15:00Z"}` + "\n"
	for _, c := range []struct{ v, want string }{
		{"NaN", "NaN"}, {"Infinity", "Infinity"}, {"-Infinity", "-Infinity"}, {"1e999", "1e999"},
	} {
		line := `{"type":"snapshot","slug":"btc-updown-15m-1772366400","time":"2026-03-01T12:00:01Z","coin_price":` + c.v +
			`,"price_up":0.5,"price_down":0.5}` + "\n"
		_, err := transfer.Import(context.Background(), memory.New(), strings.NewReader(market+line), transfer.ImportOptions{})
		for _, w := range []string{"line 2", "not a finite number", c.want} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("coin_price %s: %v, want an error saying %q", c.v, err, w)
				break
			}
		}
		if err != nil && strings.Contains(err.Error(), "jsonLine") {
			t.Errorf("coin_price %s: %v names a Go type", c.v, err)
		}
	}
}
