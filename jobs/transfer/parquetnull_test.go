package transfer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// nullableMarketText reads a markets Parquet file's text columns that
// the JSON answer writes null when unknown, as pandas or pyarrow would:
// a null is nil, an empty string "".
type nullableMarketText struct {
	Slug             string  `parquet:"slug"`
	Winner           *string `parquet:"winner,optional"`
	UpstreamSlug     *string `parquet:"upstream_slug,optional"`
	FeeType          *string `parquet:"fee_type,optional"`
	ResolutionSource *string `parquet:"resolution_source,optional"`
}

// TestParquetMarketsUnknownTextIsNull: a market without an upstream slug,
// fee type or resolution source (an unresolved one, one recorded before
// they were) has them null in the markets Parquet file, as in its JSON
// answer and JSON Lines export, where the file had "" (which pandas reads
// as a value, not NaN); a market that has them has them as they are, and
// the file reads back into the store as the market it was.
func TestParquetMarketsUnknownTextIsNull(t *testing.T) {
	t.Parallel()
	st, _ := seeded(t, 1, 4)
	ctx := context.Background()
	all, _, err := st.ListMarkets(ctx, store.MarketFilter{})
	if err != nil || len(all) < 2 {
		t.Fatalf("markets: %d %v", len(all), err)
	}
	bare, known := all[0], all[1]
	bare.UpstreamSlug, bare.FeeType, bare.ResolutionSource = "", "", ""
	known.UpstreamSlug, known.FeeType, known.ResolutionSource = "up-"+known.Slug, "crypto_fees_v2", store.SourceChainlink
	if err := st.UpsertMarkets(ctx, []store.Market{bare, known}); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if _, err := transfer.Export(ctx, st, &buf, transfer.ExportOptions{Format: transfer.Parquet, What: transfer.Markets}); err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"winner", "upstream_slug", "fee_type", "resolution_source"} {
		col, ok := pf.Schema().Lookup(c)
		if !ok {
			t.Fatalf("no column %s", c)
		}
		if !col.Node.Optional() {
			t.Errorf("column %s is required: an unknown value cannot be null", c)
		}
	}
	rows, err := parquet.Read[nullableMarketText](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	str := func(s *string) string {
		if s == nil {
			return "null"
		}
		return "\"" + *s + "\""
	}
	seen := 0
	for _, r := range rows {
		switch r.Slug {
		case bare.Slug:
			seen++
			if r.UpstreamSlug != nil || r.FeeType != nil || r.ResolutionSource != nil {
				t.Errorf("unknown fields: upstream_slug %s, fee_type %s, resolution_source %s; want null each",
					str(r.UpstreamSlug), str(r.FeeType), str(r.ResolutionSource))
			}
		case known.Slug:
			seen++
			if str(r.UpstreamSlug) != str(&known.UpstreamSlug) || str(r.FeeType) != `"crypto_fees_v2"` || str(r.ResolutionSource) != str(&known.ResolutionSource) {
				t.Errorf("known fields: upstream_slug %s, fee_type %s, resolution_source %s", str(r.UpstreamSlug), str(r.FeeType), str(r.ResolutionSource))
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d of the 2 markets in the file", seen)
	}
}
