package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/stats"
)

// The trials as a table (GET /v1/sweeps/{id}/trials as CSV or Parquet):
// a row a trial, its columns those of the Python client's trials_frame:
// trial, each parameter by its path, train_objective, test_objective, and
// every figure of the train and test statistics flattened (train.total_pnl,
// test.sqn, …; an interval as its _low and _high, pnl_per_market as its
// _mean, _sd, _p5, _p50 and _p95). The per-day and calibration lists stay
// in the JSON answer. A null figure is an empty CSV cell and a null
// Parquet value.

// ColumnKind is a table column's type.
type ColumnKind int

// Column kinds: a Parquet int64, double, string or boolean.
const (
	KindInt ColumnKind = iota
	KindFloat
	KindString
	KindBool
)

// Column is one column of the trials table.
type Column struct {
	Name string
	Kind ColumnKind
}

// summaryFigures are a Summary's flat figures, in column order: name, kind
// and how to read it (nil for null).
var summaryFigures = []struct {
	name string
	kind ColumnKind
	get  func(s *stats.Summary) any
}{
	{"n_markets", KindInt, func(s *stats.Summary) any { return int64(s.NMarkets) }},
	{"n_markets_traded", KindInt, func(s *stats.Summary) any { return int64(s.NMarketsTraded) }},
	{"n_trades", KindInt, func(s *stats.Summary) any { return int64(s.NTrades) }},
	{"total_pnl", KindFloat, func(s *stats.Summary) any { return s.TotalPnL }},
	{"total_fees", KindFloat, func(s *stats.Summary) any { return s.TotalFees }},
	{"win_rate", KindFloat, func(s *stats.Summary) any { return ptr(s.WinRate) }},
	{"win_rate_ci95_low", KindFloat, func(s *stats.Summary) any { return bound(s.WinRateCI95, 0) }},
	{"win_rate_ci95_high", KindFloat, func(s *stats.Summary) any { return bound(s.WinRateCI95, 1) }},
	{"ev_per_trade", KindFloat, func(s *stats.Summary) any { return ptr(s.EVPerTrade) }},
	{"ev_ci95_low", KindFloat, func(s *stats.Summary) any { return bound(s.EVCI95, 0) }},
	{"ev_ci95_high", KindFloat, func(s *stats.Summary) any { return bound(s.EVCI95, 1) }},
	{"sqn", KindFloat, func(s *stats.Summary) any { return ptr(s.SQN) }},
	{"pnl_per_market_mean", KindFloat, perMarket(func(d *stats.Distribution) *float64 { return &d.Mean })},
	{"pnl_per_market_sd", KindFloat, perMarket(func(d *stats.Distribution) *float64 { return d.SD })},
	{"pnl_per_market_p5", KindFloat, perMarket(func(d *stats.Distribution) *float64 { return &d.P5 })},
	{"pnl_per_market_p50", KindFloat, perMarket(func(d *stats.Distribution) *float64 { return &d.P50 })},
	{"pnl_per_market_p95", KindFloat, perMarket(func(d *stats.Distribution) *float64 { return &d.P95 })},
	{"sharpe_per_market", KindFloat, func(s *stats.Summary) any { return ptr(s.SharpePerMarket) }},
	{"sharpe_daily_ann", KindFloat, func(s *stats.Summary) any { return ptr(s.SharpeDailyAnn) }},
	{"sortino_daily_ann", KindFloat, func(s *stats.Summary) any { return ptr(s.SortinoDailyAnn) }},
	{"portfolio_max_drawdown", KindFloat, func(s *stats.Summary) any { return ptr(s.PortfolioMaxDrawdown) }},
	{"brier_entry", KindFloat, func(s *stats.Summary) any { return ptr(s.BrierEntry) }},
	{"brier_market", KindFloat, func(s *stats.Summary) any { return ptr(s.BrierMarket) }},
	{"psr0", KindFloat, func(s *stats.Summary) any { return ptr(s.PSR0) }},
}

func ptr(x *float64) any {
	if x == nil {
		return nil
	}
	return *x
}

func bound(iv *stats.Interval, i int) any {
	if iv == nil {
		return nil
	}
	return iv[i]
}

// perMarket reads one figure of pnl_per_market, nil when it is null.
func perMarket(f func(*stats.Distribution) *float64) func(*stats.Summary) any {
	return func(s *stats.Summary) any {
		if s.PnLPerMarket == nil {
			return nil
		}
		return ptr(f(s.PnLPerMarket))
	}
}

// Table is trials as rows of typed cells: Rows[i][j] is trial i's value of
// Columns[j], nil for null; an int64, float64, string or bool by the
// column's kind.
type Table struct {
	Columns []Column
	Rows    [][]any
}

// TrialTable lays the trials out as a table. paths are the sweep's
// parameters in order (Request.Parameters); a parameter's column is a
// double when every trial's value is a number, a boolean when every value
// is one, else a string (a number among strings written as its JSON).
func TrialTable(paths []string, trials []TrialResult) Table {
	kinds := make([]ColumnKind, len(paths))
	for j := range paths {
		kinds[j] = columnKind(trials, j)
	}
	return trialTable(paths, kinds, trials)
}

// SweepTrialTable is TrialTable of a page of the sweep's trials, params
// its parameters (Request.Parameters): a parameter's column has its kind
// by every value the sweep swept, not by the page's, so that every page
// of one sweep has the same columns of the same types (an empty page past
// the end had its string and boolean parameters as doubles, and a reader
// that stacks the pages, polars or pyarrow, refused the mix).
func SweepTrialTable(params []Parameter, trials []TrialResult) Table {
	paths := make([]string, len(params))
	kinds := make([]ColumnKind, len(params))
	for j, p := range params {
		paths[j] = p.Path
		kinds[j] = valuesKind(len(p.Values), func(i int) any { return p.Values[i] })
	}
	return trialTable(paths, kinds, trials)
}

func trialTable(paths []string, kinds []ColumnKind, trials []TrialResult) Table {
	var t Table
	t.Columns = append(t.Columns, Column{"trial", KindInt})
	for j, p := range paths {
		t.Columns = append(t.Columns, Column{p, kinds[j]})
	}
	t.Columns = append(t.Columns, Column{"train_objective", KindFloat}, Column{"test_objective", KindFloat})
	for _, part := range []string{"train", "test"} {
		for _, f := range summaryFigures {
			t.Columns = append(t.Columns, Column{part + "." + f.name, f.kind})
		}
	}
	t.Rows = make([][]any, len(trials))
	for i := range trials {
		tr := &trials[i]
		row := make([]any, 0, len(t.Columns))
		row = append(row, int64(tr.Trial))
		for j := range paths {
			var v any
			if j < len(tr.Parameters) {
				v = tr.Parameters[j].Value
			}
			row = append(row, cellOf(v, kinds[j]))
		}
		row = append(row, ptr(tr.TrainObjective), ptr(tr.TestObjective))
		for _, s := range []*stats.Summary{&tr.Train, tr.Test} {
			for _, f := range summaryFigures {
				if s == nil {
					row = append(row, nil)
				} else {
					row = append(row, f.get(s))
				}
			}
		}
		t.Rows[i] = row
	}
	return t
}

// columnKind is the kind of parameter j's column over the trials.
func columnKind(trials []TrialResult, j int) ColumnKind {
	return valuesKind(len(trials), func(i int) any {
		if j >= len(trials[i].Parameters) {
			return nil
		}
		return trials[i].Parameters[j].Value
	})
}

// valuesKind is the kind of a column of the n values value(i).
func valuesKind(n int, value func(i int) any) ColumnKind {
	num, boolean := true, true
	for i := range n {
		switch value(i).(type) {
		case float64, int, int64, json.Number:
			boolean = false
		case bool:
			num = false
		case nil:
		default:
			num, boolean = false, false
		}
	}
	switch {
	case num:
		return KindFloat
	case boolean:
		return KindBool
	}
	return KindString
}

// cellOf is a parameter's value in a column of the kind.
func cellOf(v any, kind ColumnKind) any {
	if v == nil {
		return nil
	}
	switch kind {
	case KindFloat:
		switch x := v.(type) {
		case float64:
			return x
		case int:
			return float64(x)
		case int64:
			return float64(x)
		case json.Number:
			f, _ := x.Float64()
			return f
		}
	case KindBool:
		if b, ok := v.(bool); ok {
			return b
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v) // a number or bool among strings
	return string(b)
}

// WriteCSV writes the table: a header row of the column names, then a
// row a trial; a null is an empty cell.
func (t Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	rec := make([]string, len(t.Columns))
	for j, c := range t.Columns {
		rec[j] = c.Name
	}
	if err := cw.Write(rec); err != nil {
		return fmt.Errorf("sweep: write the trials' CSV header: %w", err)
	}
	for _, row := range t.Rows {
		for j, v := range row {
			rec[j] = csvCell(v)
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("sweep: write a trial's CSV row: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// Schema is the table's Parquet schema: every column optional (a null is a
// null), int64, double, UTF-8 string or boolean by its kind, in the
// table's order (the CSV's: trial, the parameters, then the figures).
func (t Table) Schema() *parquet.Schema {
	g := orderedGroup{Group: parquet.Group{}}
	for _, c := range t.Columns {
		g.order = append(g.order, c.Name)
		var n parquet.Node
		switch c.Kind {
		case KindInt:
			n = parquet.Int(64)
		case KindFloat:
			n = parquet.Leaf(parquet.DoubleType)
		case KindBool:
			n = parquet.Leaf(parquet.BooleanType)
		default:
			n = parquet.String()
		}
		g.Group[c.Name] = parquet.Optional(n)
	}
	return parquet.NewSchema("trials", g)
}

// orderedGroup is a Parquet group whose fields keep the order given,
// where parquet.Group sorts them by name (so the trials' columns began
// with the parameters' paths and ended with trial).
type orderedGroup struct {
	parquet.Group
	order []string
}

func (g orderedGroup) Fields() []parquet.Field {
	fields := g.Group.Fields()
	at := make(map[string]int, len(g.order))
	for i, name := range g.order {
		at[name] = i
	}
	slices.SortFunc(fields, func(a, b parquet.Field) int { return at[a.Name()] - at[b.Name()] })
	return fields
}

// WriteParquet writes the table as one Parquet file, zstd-compressed.
func (t Table) WriteParquet(w io.Writer) error {
	schema := t.Schema()
	// A row's values go in the schema's column order, each at
	// definition level 1 when present, 0 when null.
	index := make(map[string]int, len(t.Columns))
	for i, path := range schema.Columns() {
		index[path[0]] = i
	}
	leaf := make([]int, len(t.Columns))
	for j, c := range t.Columns {
		leaf[j] = index[c.Name]
	}
	pw := parquet.NewGenericWriter[any](w, schema, parquet.Compression(&parquet.Zstd))
	rows := make([]parquet.Row, 0, 256)
	flush := func() error {
		if _, err := pw.WriteRows(rows); err != nil {
			return fmt.Errorf("sweep: write the trials' Parquet rows: %w", err)
		}
		rows = rows[:0]
		return nil
	}
	for _, r := range t.Rows {
		row := make(parquet.Row, len(r))
		for j, v := range r {
			row[leaf[j]] = parquetValue(v).Level(0, definition(v), leaf[j])
		}
		rows = append(rows, row)
		if len(rows) == cap(rows) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("sweep: finish the trials' Parquet file: %w", err)
	}
	return nil
}

func definition(v any) int {
	if v == nil {
		return 0
	}
	return 1
}

func parquetValue(v any) parquet.Value {
	switch x := v.(type) {
	case int64:
		return parquet.Int64Value(x)
	case float64:
		return parquet.DoubleValue(x)
	case bool:
		return parquet.BooleanValue(x)
	case string:
		return parquet.ByteArrayValue([]byte(x))
	}
	return parquet.NullValue()
}
