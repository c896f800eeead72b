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
	"slices"
	"strings"
	"testing"

	"github.com/updown/updown/store"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden_sha256.txt from the engine as it is")

// goldenCases is how many random replays testdata/golden_sha256.txt pins.
const goldenCases = 300

// goldenCase builds random case c: the same market and strategy every run,
// from a generator of its own so that other tests may draw as they like.
func goldenCase(c int) (name string, r Request, res, full Result, err error) {
	rng := rand.New(rand.NewPCG(uint64(c), 1212))
	n := 1 + rng.IntN(60)
	if c%5 == 0 {
		n = 900 + rng.IntN(1500)
	}
	m, snaps := randomMarket(rng, n)
	s := randomStrategy(rng, snaps[0].CoinPrice)
	if res, err = Run(m, snaps, s); err != nil {
		return "", Request{}, res, full, err
	}
	tape, err := store.TapeOf(snaps, s.Outcome())
	if err != nil {
		return "", Request{}, res, full, err
	}
	full, err = RunWindow(Input{Market: m, Tape: tape}, s, fullWindow)
	return fmt.Sprintf("case %d (n=%d)", c, n), Request{MarketSlug: m.Slug, Strategy: s}, res, full, err
}

// TestRunGolden pins the engine's answers, byte for byte, in two files of
// SHA-256 sums written with -update-golden:
//
//   - testdata/golden_sha256.txt holds the answers the engine gave before
//     fees, latency and resting orders existed. DESIGN 6 keeps them: every
//     MARKET answer is the same, byte for byte, once the fields every
//     answer now carries (fee, total_fees, and the strategy's feeModel
//     NONE and latencyMs 0) are taken out and every trade event is listed
//     (an answer now lists at most MaxTradeEvents). LIMIT answers are not
//     compared there: their exits moved from the ask to the bid (DESIGN 6).
//     Its sums of the MARKET answers whose pnl_curve had lost points to
//     trade snapshots were rewritten once, when curveIndices began to use
//     its whole budget (topUp), and those of the MARKET answers whose
//     spread conditions met their value exactly once more, when spread
//     became the decimal difference of the prices (spreadOf); nothing
//     else of those answers changed.
//   - testdata/golden_v2_sha256.txt holds every answer whole, as the
//     engine gives it now; an answer that changes by one byte fails here.
func TestRunGolden(t *testing.T) {
	t.Parallel()
	const v1Path, v2Path = "testdata/golden_sha256.txt", "testdata/golden_v2_sha256.txt"
	v1, v2 := make([]string, goldenCases), make([]string, goldenCases)
	limit := make([]bool, goldenCases)
	for c := range goldenCases {
		name, req, res, full, err := goldenCase(c)
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
		v2[c] = sha(b)
		// The minimum order size's warning came later than the costs, and
		// goes with them: on a market with none recorded, a positionSize
		// under Polymarket's usual 5 shares is warned of.
		full.Warnings = slices.DeleteFunc(full.Warnings, func(w string) bool { return strings.Contains(w, "minimum order size") })
		if len(full.Warnings) == 0 {
			full.Warnings = nil
		}
		fb, err := json.Marshal(full)
		if err != nil {
			t.Fatal(err)
		}
		v1[c] = sha(withoutCostFields(t, name, fb))
		limit[c] = req.OrderType == OrderLimit
	}
	if *updateGolden {
		// The first file is history: only the second is rewritten.
		if err := os.WriteFile(v2Path, []byte(strings.Join(v2, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want1, want2 := readSums(t, v1Path), readSums(t, v2Path)
	compared := 0
	for c := range goldenCases {
		if !limit[c] {
			compared++
			if v1[c] != want1[c] {
				name, _, _, _, _ := goldenCase(c)
				t.Errorf("%s: the MARKET answer changed from the one before costs (sha256 %s, golden %s)", name, v1[c], want1[c])
			}
		}
		if v2[c] != want2[c] {
			name, _, _, _, _ := goldenCase(c)
			t.Errorf("%s: the answer changed (sha256 %s, golden %s)", name, v2[c], want2[c])
		}
	}
	if compared < goldenCases/2 {
		t.Errorf("only %d of %d cases are MARKET answers compared with the first golden file", compared, goldenCases)
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// withoutCostFields takes out of an answer without costs the fields every
// answer carries since DESIGN 6 said so: the trades' fee and total_fees
// (all 0 here) and the strategy's feeModel NONE and latencyMs 0.
func withoutCostFields(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	for _, cut := range []struct{ old, new string }{
		{`,"feeModel":"NONE","latencyMs":0}`, `}`},
		{`"total_fees":0,`, ``},
		{`,"fee":0,"position_pnl"`, `,"position_pnl"`},
	} {
		if !bytes.Contains(b, []byte(cut.old)) && cut.old != `,"fee":0,"position_pnl"` {
			t.Fatalf("%s: the answer has no %s", name, cut.old)
		}
		b = bytes.ReplaceAll(b, []byte(cut.old), []byte(cut.new))
	}
	return b
}

func readSums(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var sums []string
	for sc.Scan() {
		sums = append(sums, sc.Text())
	}
	if len(sums) != goldenCases {
		t.Fatalf("%s has %d sums, want %d", path, len(sums), goldenCases)
	}
	return sums
}
