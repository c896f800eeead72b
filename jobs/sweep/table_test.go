package sweep_test

import (
	"bytes"
	"encoding/csv"
	"io"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/stats"
	"github.com/updown/updown/jobs/sweep"
)

func f64(x float64) *float64 { return &x }

// tableTrials are two trials of a sweep over a number, an enum and a
// boolean: the first with test statistics and every interval, the second
// without a test set and with null figures.
func tableTrials() ([]string, []sweep.TrialResult) {
	paths := []string{"/entryConditions/0/value", "/orderType", "/postOnly"}
	first := stats.Summary{NMarkets: 10, NMarketsTraded: 8, NTrades: 12, TotalPnL: 3.25, TotalFees: 0.5, WinRate: f64(58.333333)}
	first.EVCI95 = &stats.Interval{-0.1, 0.6}
	first.WinRateCI95 = &stats.Interval{31.9, 80.7}
	first.PnLPerMarket = &stats.Distribution{Mean: 0.4, SD: f64(1.2), P5: -1, P50: 0.3, P95: 2}
	test := stats.Summary{NMarkets: 4, TotalPnL: -1}
	return paths, []sweep.TrialResult{
		{Trial: 0, Parameters: []sweep.ParameterValue{{Path: paths[0], Value: 0.3}, {Path: paths[1], Value: "MARKET"}, {Path: paths[2], Value: true}},
			Train: first, Test: &test, TrainObjective: f64(3.25), TestObjective: f64(-1)},
		{Trial: 1, Parameters: []sweep.ParameterValue{{Path: paths[0], Value: 0.35}, {Path: paths[1], Value: "GTC"}, {Path: paths[2], Value: false}},
			Train: stats.Summary{NMarkets: 10}},
	}
}

func TestTrialTableCSV(t *testing.T) {
	t.Parallel()
	paths, trials := tableTrials()
	var buf bytes.Buffer
	if err := sweep.TrialTable(paths, trials).WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want a header and 2 rows", len(recs))
	}
	col := map[string]int{}
	for j, name := range recs[0] {
		col[name] = j
	}
	for _, tc := range []struct {
		row  int
		name string
		want string
	}{
		{1, "trial", "0"},
		{1, "/entryConditions/0/value", "0.3"},
		{1, "/orderType", "MARKET"},
		{1, "/postOnly", "true"},
		{1, "train_objective", "3.25"},
		{1, "test_objective", "-1"},
		{1, "train.n_trades", "12"},
		{1, "train.win_rate", "58.333333"},
		{1, "train.ev_ci95_low", "-0.1"},
		{1, "train.win_rate_ci95_high", "80.7"},
		{1, "train.pnl_per_market_sd", "1.2"},
		{1, "train.sqn", ""},
		{1, "test.total_pnl", "-1"},
		{2, "trial", "1"},
		{2, "/entryConditions/0/value", "0.35"},
		{2, "/postOnly", "false"},
		{2, "train_objective", ""},
		{2, "train.n_markets", "10"},
		{2, "train.pnl_per_market_mean", ""},
		{2, "test.n_markets", ""},
		{2, "test_objective", ""},
	} {
		j, ok := col[tc.name]
		if !ok {
			t.Errorf("no column %q in %v", tc.name, recs[0])
			continue
		}
		if got := recs[tc.row][j]; got != tc.want {
			t.Errorf("row %d %s = %q, want %q", tc.row, tc.name, got, tc.want)
		}
	}
}

func TestTrialTableParquet(t *testing.T) {
	t.Parallel()
	paths, trials := tableTrials()
	tbl := sweep.TrialTable(paths, trials)
	var buf bytes.Buffer
	if err := tbl.WriteParquet(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 2 {
		t.Fatalf("%d rows, want 2", f.NumRows())
	}
	leaf := map[string]int{}
	for _, c := range f.Schema().Columns() {
		leaf[c[0]] = len(leaf)
	}
	if len(leaf) != len(tbl.Columns) {
		t.Fatalf("%d columns, want %d", len(leaf), len(tbl.Columns))
	}
	// The columns in the table's (the CSV's) order: trial first.
	for i, c := range f.Schema().Columns() {
		if c[0] != tbl.Columns[i].Name {
			t.Errorf("column %d is %q, want %q (the CSV's order)", i, c[0], tbl.Columns[i].Name)
		}
	}
	r := parquet.NewReader(f)
	defer r.Close()
	rows := make([]parquet.Row, 2)
	if n, err := r.ReadRows(rows); n != 2 || err != nil && err != io.EOF {
		t.Fatalf("read %d rows: %v", n, err)
	}
	value := func(row int, name string) parquet.Value {
		t.Helper()
		j, ok := leaf[name]
		if !ok {
			t.Fatalf("no column %q", name)
		}
		for _, v := range rows[row] {
			if v.Column() == j {
				return v
			}
		}
		t.Fatalf("row %d has no value of %q", row, name)
		return parquet.Value{}
	}
	if v := value(0, "/entryConditions/0/value"); v.Double() != 0.3 {
		t.Errorf("row 0 value %v", v)
	}
	if v := value(0, "/orderType"); v.String() != "MARKET" {
		t.Errorf("row 0 orderType %v", v)
	}
	if v := value(1, "/postOnly"); v.IsNull() || v.Boolean() {
		t.Errorf("row 1 postOnly %v", v)
	}
	if v := value(0, "train.n_trades"); v.Int64() != 12 {
		t.Errorf("row 0 n_trades %v", v)
	}
	if v := value(0, "train.ev_ci95_high"); v.Double() != 0.6 {
		t.Errorf("row 0 ev_ci95_high %v", v)
	}
	for _, name := range []string{"train.sqn", "test.total_pnl", "train_objective", "train.pnl_per_market_p50"} {
		if v := value(1, name); !v.IsNull() {
			t.Errorf("row 1 %s = %v, want null", name, v)
		}
	}
	// A zero is a value, not a null.
	if v := value(1, "train.n_trades"); v.IsNull() || v.Int64() != 0 {
		t.Errorf("row 1 n_trades %v, want 0", v)
	}
	if v := value(0, "test.total_pnl"); v.Double() != -1 {
		t.Errorf("row 0 test.total_pnl %v", v)
	}
}
