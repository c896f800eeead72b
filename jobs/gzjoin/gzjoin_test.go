package gzjoin

import (
	"bytes"
	"compress/gzip"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// readMember reads exactly one gzip member with the standard library's
// reader, which checks the CRC-32 and the length, and fails on anything
// after the member.
func readMember(t testing.TB, gz []byte) []byte {
	t.Helper()
	br := bytes.NewReader(gz)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatalf("gzip header: %v", err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip member: %v", err)
	}
	if br.Len() != 0 {
		t.Fatalf("%d bytes after the member", br.Len())
	}
	return got
}

func randomJSON(r *rand.Rand, n int) []byte {
	var b strings.Builder
	b.WriteString(`[`)
	for b.Len() < n {
		b.WriteString(`{"price":0.`)
		b.WriteByte(byte('0' + r.IntN(10)))
		b.WriteString(`,"size":`)
		b.WriteString(strings.Repeat("7", 1+r.IntN(6)))
		b.WriteString(`},`)
	}
	b.WriteString(`0]`)
	return []byte(b.String())
}

func TestWriteMember(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 200_000)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	cases := []struct {
		name             string
		head, body, tail []byte
	}{
		{"empty", nil, nil, nil},
		{"envelope", []byte(`{"success":true,"data":`), randomJSON(r, 300_000), []byte(`,"timestamp":"2026-11-25T14:00:00.000Z"}` + "\n")},
		{"empty body", []byte(`{"a":`), nil, []byte(`}`)},
		{"incompressible", []byte("x"), noise, []byte("y")},
		{"head and tail over a stored block", bytes.Repeat([]byte("h"), 70_000), []byte("body"), bytes.Repeat([]byte("t"), 140_000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, err := Deflate(c.body)
			if err != nil {
				t.Fatal(err)
			}
			var gz bytes.Buffer
			n, err := WriteMember(&gz, c.head, d, c.tail)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(gz.Len()) {
				t.Errorf("WriteMember reported %d bytes, wrote %d", n, gz.Len())
			}
			want := append(append(append([]byte{}, c.head...), c.body...), c.tail...)
			if got := readMember(t, gz.Bytes()); !bytes.Equal(got, want) {
				t.Fatalf("member inflates to %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

func TestInflate(t *testing.T) {
	t.Parallel()
	body := randomJSON(rand.New(rand.NewPCG(3, 4)), 100_000)
	d, err := Deflate(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Blocks) >= len(body)/3 {
		t.Errorf("deflated %d bytes to %d", len(body), len(d.Blocks))
	}
	got, err := d.Inflate(len(body))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Inflate: %d bytes, %v", len(got), err)
	}

	flipped := d
	flipped.Blocks = bytes.Clone(d.Blocks)
	flipped.Blocks[len(flipped.Blocks)/2] ^= 0x10
	cut := d
	cut.Blocks = d.Blocks[:len(d.Blocks)/2]
	for name, bad := range map[string]Deflated{
		"longer than said":  {Blocks: d.Blocks, CRC: d.CRC, Len: d.Len - 1},
		"shorter than said": {Blocks: d.Blocks, CRC: d.CRC, Len: d.Len + 1},
		"wrong checksum":    {Blocks: d.Blocks, CRC: d.CRC + 1, Len: d.Len},
		"flipped bit":       flipped,
		"cut short":         cut,
		"not deflate":       {Blocks: []byte{0xff, 0xff, 0xff}, Len: 3},
	} {
		if _, err := bad.Inflate(len(body) + 1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := d.Inflate(len(body) - 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a length over the bound: err %v, want ErrCorrupt", err)
	}
}

// TestInflateDoesNotBelieveALength: a corrupt length within the bound
// costs an allocation the size of what the blocks can hold, not of what
// the length claims.
func TestInflateDoesNotBelieveALength(t *testing.T) {
	empty, err := Deflate(nil)
	if err != nil {
		t.Fatal(err)
	}
	lying := Deflated{Blocks: empty.Blocks, CRC: empty.CRC, Len: 1 << 30}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := lying.Inflate(1 << 30); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("a 1 GiB claim on %d bytes of blocks allocated %d bytes", len(empty.Blocks), got)
	}
}

func FuzzCombine(f *testing.F) {
	f.Add([]byte("hello, "), []byte("world"))
	f.Add([]byte{}, []byte{0})
	f.Add(bytes.Repeat([]byte{0xff}, 1000), []byte{})
	f.Add([]byte("{\"data\":"), bytes.Repeat([]byte(`{"pnl":0.5},`), 11_000)) // a 15m answer's length
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Fatalf("combine = %08x, want %08x", got, want)
		}
	})
}

func FuzzWriteMember(f *testing.F) {
	f.Add([]byte(`{"data":`), []byte(`[1,2,3]`), []byte(`}`))
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, head, body, tail []byte) {
		d, err := Deflate(body)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := d.Inflate(len(body)); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("Inflate: %q, %v", got, err)
		}
		var gz bytes.Buffer
		if _, err := WriteMember(&gz, head, d, tail); err != nil {
			t.Fatal(err)
		}
		want := append(append(append([]byte{}, head...), body...), tail...)
		if got := readMember(t, gz.Bytes()); !bytes.Equal(got, want) {
			t.Fatalf("member inflates to %q, want %q", got, want)
		}
	})
}

// BenchmarkCombine is the checksum of a member around a 15m replay's
// answer (125 KB) and a 24hr one's (5 MB): every answer the api passes on
// deflated pays it once.
func BenchmarkCombine(b *testing.B) {
	for _, n := range []int64{125_000, 5_000_000} {
		b.Run(strconv.FormatInt(n, 10), func(b *testing.B) {
			for b.Loop() {
				combine(0x12345678, 0x9abcdef0, n)
			}
		})
	}
}
