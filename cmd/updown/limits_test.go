package main

import (
	"strings"
	"testing"
)

// TestTierCapsNameThePlans: a pair whose tier is no plan is refused
// naming the plans there are (JOBS_IN_FLIGHT=GOLD=3 said only "is not
// TIER=N").
func TestTierCapsNameThePlans(t *testing.T) {
	for _, env := range []string{"JOBS_IN_FLIGHT", "READS_IN_FLIGHT"} {
		t.Setenv(env, "GOLD=3")
		_, err := tierCaps(env, "PRO=4,ENTERPRISE=16")
		if err == nil {
			t.Fatalf("%s=GOLD=3 accepted", env)
		}
		for _, want := range []string{env, "GOLD=3", "STARTER, PRO, PRO_TRIAL, SUITE, ENTERPRISE"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s=GOLD=3: %q does not say %q", env, err, want)
			}
		}
	}
}
