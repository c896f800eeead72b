package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/updown/updown/jobs/collect"
)

// runMarketsFillFees is `updown markets fill-fees`: the fee fields of
// stored markets that lack them, from Gamma.
func runMarketsFillFees(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("markets fill-fees", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var slugs []string
	fs.Func("slug", "a stored market's `SLUG` (ours, as the API lists it); repeat for several; without any, every market the other flags select", func(s string) error {
		n := len(slugs)
		for _, one := range strings.Split(s, ",") {
			if one = strings.TrimSpace(one); one != "" {
				slugs = append(slugs, one)
			}
		}
		// --slug "$SLUG" with SLUG unset named no market, and the
		// command went on to every market (with --overwrite, over their
		// stored fees).
		if len(slugs) == n {
			return errors.New("names no market: give a stored market's slug, or leave --slug out for every market the other flags select")
		}
		return nil
	})
	coin := fs.String("coin", "", "only markets of this coin (BTC, ETH, SOL)")
	marketType := fs.String("market-type", "", "only markets of this type (5m, 15m, 1hr, 4hr, 24hr)")
	from := fs.String("from", "", "only markets starting at or after this time (RFC 3339, a date, or epoch ms)")
	to := fs.String("to", "", "only markets starting before this time (RFC 3339, a date, or epoch ms)")
	overwrite := fs.Bool("overwrite", false, "write Gamma's fee fields over those stored; without it only missing fields are filled, and a market whose stored fields differ from Gamma's is left as it is and named")
	dryRun := fs.Bool("dry-run", false, "write nothing: count and name what would be filled")
	gammaURL := urlFlag(fs, "gamma-url", envOr(collect.EnvGammaURL, collect.DefaultGammaURL), "Gamma API base `URL` (env "+collect.EnvGammaURL+")")
	dbURL := databaseURLFlag(fs)
	fs.Usage = commandUsage(fs, "updown markets fill-fees [--slug S]... [--coin C] [--market-type T] [--from T] [--to T] [--overwrite] [--dry-run]\n\n"+
		"Fill the fee fields (fee_type, taker_fee_rate, fee_exponent, maker_rebate_rate) of stored markets that lack them\n"+
		"from Gamma: markets recorded or imported by builds that kept no fee type, or imported from files without it.\n"+
		"A MARKET-fee replay charges an early-2026 crypto_fees market nothing until its fee fields are filled. Each market\n"+
		"is written on its own; a re-run asks Gamma only of the markets still lacking, and changes nothing once none do.", adminEnv)
	if err := parseFlags(fs, args); err != nil {
		return withArgumentHint(err, "to name markets, give them as --slug "+shellQuote(strings.Join(wordsBeforeFlag(fs.Args()), ",")))
	}
	if len(slugs) > 0 && (*coin != "" || *marketType != "" || *from != "" || *to != "") {
		return errors.New("markets fill-fees: --slug names the markets; give it without --coin, --market-type, --from and --to")
	}
	filter, err := marketFilter("markets fill-fees", *coin, *marketType, *from, *to, "", nil)
	if err != nil {
		return err
	}
	st, err := openAdminStore(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := collect.FillFees(ctx, collect.FillFeesConfig{
		Gamma: *gammaURL, Store: st, Slugs: slugs, Filter: filter, Overwrite: *overwrite, DryRun: *dryRun,
		// A line every 500 markets: a year of 5m markets takes hours.
		Progress: func(done, total int) {
			if done%500 == 0 && done < total {
				fmt.Fprintf(stderr, "fill-fees: %d of %d markets looked up\n", done, total)
			}
		},
	})
	for _, n := range res.NotFound {
		fmt.Fprintf(stderr, "%s: not found: %s\n", n.Slug, n.Why)
	}
	for _, n := range res.Differ {
		fmt.Fprintf(stderr, "%s: differs from Gamma: %s\n", n.Slug, n.Why)
	}
	for _, n := range res.NoFees {
		fmt.Fprintf(stderr, "%s: %s\n", n.Slug, n.Why)
	}
	for _, s := range res.NotStored {
		fmt.Fprintf(stderr, "%s: no such market is stored\n", s)
	}
	if err != nil {
		return fmt.Errorf("markets fill-fees: %w", err)
	}
	fmt.Fprintln(stdout, fillFeesSummary(res, *overwrite, *dryRun))
	if len(res.NotStored) > 0 {
		return fmt.Errorf("markets fill-fees: %d of the markets given are not stored: %s", len(res.NotStored), strings.Join(res.NotStored, ", "))
	}
	return nil
}

// fillFeesSummary is the line a run of fill-fees ends with.
func fillFeesSummary(res collect.FillFeesResult, overwrite, dryRun bool) string {
	updated := fmt.Sprintf("%d updated", res.Updated)
	if dryRun {
		updated = fmt.Sprintf("%d would be updated (dry run: nothing written)", res.Updated)
	}
	lookedUp := "those lacking fee fields"
	if overwrite {
		lookedUp = "all, --overwrite"
	}
	return fmt.Sprintf("fill-fees: %d markets selected, %d looked up on Gamma (%s): %s, %d already as Gamma has them, "+
		"%d without fees on Gamma, %d not found on Gamma, %d differing from Gamma (kept; --overwrite takes Gamma's)",
		res.Selected, res.Lacking, lookedUp, updated, res.Current, len(res.NoFees), len(res.NotFound), len(res.Differ))
}
