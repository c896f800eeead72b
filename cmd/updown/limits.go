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
	return envPairs(env, example, tierPairShape, "tier", func(name, num string) (store.Tier, int, bool) {
		n, err := strconv.Atoi(num)
		tier, tErr := parseTier(name)
		return tier, n, err == nil && n >= 0 && tErr == nil
	})
}

// tierPairShape is what a TIER=N pair of tierCaps takes, naming the plans:
// "GOLD=3 is not TIER=N" left GOLD's fault to be guessed.
var tierPairShape = func() string {
	names := make([]string, len(store.Tiers))
	for i, t := range store.Tiers {
		names[i] = string(t)
	}
	return "TIER=N with TIER a plan (" + strings.Join(names, ", ") + ") and N a whole number (0: no cap)"
}()

// billingProductTiers reads BILLING_PRODUCT_TIERS, the billing provider's
// product ids mapped to tiers as comma-separated PRODUCT=TIER pairs (nil
// when unset: activations take data.metadata.tier). With it, an
// activation's tier is its data.product_id's (api.Config).
func billingProductTiers() (map[string]store.Tier, error) {
	return envPairs("BILLING_PRODUCT_TIERS", "pdt_abc=PRO,pdt_def=ENTERPRISE",
		"PRODUCT=TIER with a tier of STARTER, PRO, PRO_TRIAL, SUITE, ENTERPRISE", "product", func(product, name string) (string, store.Tier, bool) {
			tier, err := parseTier(name)
			return product, tier, product != "" && err == nil
		})
}

// envPairs reads the environment variable env as comma-separated K=V
// pairs, each trimmed and parsed by pair (false: not a pair of the form
// shape), into a map (nil when env is unset); a key given twice is an
// error that names it as a what. example goes in the errors.
func envPairs[K comparable, V any](env, example, shape, what string, pair func(k, v string) (K, V, bool)) (map[K]V, error) {
	s := strings.TrimSpace(os.Getenv(env))
	if s == "" {
		return nil, nil
	}
	out := map[K]V{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		key, val, good := pair(strings.TrimSpace(k), strings.TrimSpace(v))
		if !ok || !good {
			return nil, fmt.Errorf("%s: %q is not %s (e.g. %s)", env, part, shape, example)
		}
		if _, twice := out[key]; twice {
			return nil, fmt.Errorf("%s: %s %v is given twice; give each %s once (e.g. %s)", env, what, key, what, example)
		}
		out[key] = val
	}
	return out, nil
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
