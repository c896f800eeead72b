package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/updown/updown/store"
)

// jobsInFlight reads JOBS_IN_FLIGHT, the caps on a customer's jobs running
// at once that differ from the plan table's (DESIGN 4: PRO and PRO_TRIAL
// 4, ENTERPRISE 16), as "TIER=N,..." ("PRO=2,ENTERPRISE=32"; 0: no cap).
func jobsInFlight() (map[store.Tier]int, error) {
	return tierCaps("JOBS_IN_FLIGHT", "PRO=4,ENTERPRISE=16")
}

// readsInFlight reads READS_IN_FLIGHT, per-tier caps on a customer's heavy
// reads answering at once (series, snapshot pages with books, exports,
// depth history), as TIER=N pairs like JOBS_IN_FLIGHT.
func readsInFlight() (map[store.Tier]int, error) {
	return tierCaps("READS_IN_FLIGHT", "PRO=4,ENTERPRISE=16")
}

// tierCaps reads the environment variable env as comma-separated TIER=N
// pairs (nil when unset); example goes in the error.
func tierCaps(env, example string) (map[store.Tier]int, error) {
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		return nil, nil
	}
	caps := map[store.Tier]int{}
	for _, part := range strings.Split(v, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		tier, tErr := parseTier(name)
		if !ok || err != nil || n < 0 || tErr != nil {
			return nil, fmt.Errorf("%s: %q is not TIER=N (e.g. %s)", env, part, example)
		}
		if _, twice := caps[tier]; twice {
			return nil, fmt.Errorf("%s: %s is given twice; give each tier once (e.g. %s)", env, tier, example)
		}
		caps[tier] = n
	}
	return caps, nil
}

// billingProductTiers reads BILLING_PRODUCT_TIERS, the billing provider's
// product ids mapped to tiers as comma-separated PRODUCT=TIER pairs (nil
// when unset: activations take data.metadata.tier). With it, an
// activation's tier is its data.product_id's (api.Config).
func billingProductTiers() (map[string]store.Tier, error) {
	const env, example = "BILLING_PRODUCT_TIERS", "pdt_abc=PRO,pdt_def=ENTERPRISE"
	v := strings.TrimSpace(os.Getenv("BILLING_PRODUCT_TIERS"))
	if v == "" {
		return nil, nil
	}
	tiers := map[string]store.Tier{}
	for _, part := range strings.Split(v, ",") {
		product, name, ok := strings.Cut(strings.TrimSpace(part), "=")
		product = strings.TrimSpace(product)
		tier, err := parseTier(name)
		if !ok || product == "" || err != nil {
			return nil, fmt.Errorf("%s: %q is not PRODUCT=TIER with a tier of STARTER, PRO, PRO_TRIAL, SUITE, ENTERPRISE (e.g. %s)", env, part, example)
		}
		if _, twice := tiers[product]; twice {
			return nil, fmt.Errorf("%s: product %s is given twice; give each product once (e.g. %s)", env, product, example)
		}
		tiers[product] = tier
	}
	return tiers, nil
}

// workerMemory reads WORKER_MEMORY_MB, the MiB of market data a worker's
// running replays may hold at once (0 or unset: the worker's default).
func workerMemory() (int64, error) {
	v := strings.TrimSpace(os.Getenv("WORKER_MEMORY_MB"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > maxMiB {
		return 0, fmt.Errorf("WORKER_MEMORY_MB: %q is not a number of MiB (0 to %d)", v, int64(maxMiB))
	}
	return n << 20, nil
}
