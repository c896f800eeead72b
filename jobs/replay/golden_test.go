package replay

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden_sha256.txt from the engine as it is")

// goldenCases is how many random replays testdata/golden_sha256.txt pins.
const goldenCases = 300

// goldenCase builds random case c: the same market and strategy every run,
// from a generator of its own so that other tests may draw as they like.
func goldenCase(c int) (name string, r Request, res Result, err error) {
	rng := rand.New(rand.NewPCG(uint64(c), 1212))
	n := 1 + rng.IntN(60)
	if c%5 == 0 {
		n = 900 + rng.IntN(1500)
	}
	m, snaps := randomMarket(rng, n)
	s := randomStrategy(rng, snaps[0].CoinPrice)
	res, err = Run(m, snaps, s)
	return fmt.Sprintf("case %d (n=%d)", c, n), Request{MarketSlug: m.Slug, Strategy: s}, res, err
}

// TestRunGolden pins the engine's answers, byte for byte, to those it gave
// before fees and latency existed (DESIGN 6: a request that names neither
// gets exactly the answer it always got). The file holds the SHA-256 of
// each answer's JSON, written by the engine of that time with
// -update-golden; an answer that changes by one byte fails here.
func TestRunGolden(t *testing.T) {
	t.Parallel()
	const path = "testdata/golden_sha256.txt"
	sums := make([]string, goldenCases)
	for c := range goldenCases {
		name, _, res, err := goldenCase(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		// The worker writes answers with AppendJSON: the same bytes.
		if a, err := res.AppendJSON(nil); err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s: AppendJSON writes\n%s\njson.Marshal\n%s", name, a, b)
		}
		h := sha256.Sum256(b)
		sums[c] = hex.EncodeToString(h[:])
	}
	if *updateGolden {
		if err := os.WriteFile(path, []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var want []string
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	if len(want) != goldenCases {
		t.Fatalf("%s has %d sums, want %d", path, len(want), goldenCases)
	}
	for c := range goldenCases {
		if sums[c] != want[c] {
			name, _, _, _ := goldenCase(c)
			t.Errorf("%s: the answer changed (sha256 %s, golden %s)", name, sums[c], want[c])
		}
	}
}
