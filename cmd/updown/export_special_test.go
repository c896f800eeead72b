package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutputWritesThroughPipesAndLinks: an export to a name that is not a
// regular file (a named pipe here; /dev/null, /dev/stdout and a shell's
// >(...) alike) writes into it, where it renamed a regular file over it
// (as root, `--out /dev/null` replaced the device with a file); an export
// to a symbolic link replaces the file it names and keeps the link; a
// directory is refused.
func TestOutputWritesThroughPipesAndLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// Read and write, so that opening it does not wait for a writer; the
	// export fits in the pipe's buffer.
	r, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o, err := createOut(fifo, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(o, "an export\n")
	if err := o.commit(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("after the export %s is %v (%v), not the named pipe it was", fifo, fi.Mode(), err)
	}
	buf := make([]byte, 64)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "an export\n" {
		t.Errorf("the pipe carried %q (%v)", buf[:n], err)
	}

	target, link := filepath.Join(dir, "2026-11.jsonl"), filepath.Join(dir, "latest.jsonl")
	if err := os.WriteFile(target, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if o, err = createOut(link, nil); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(o, "new\n")
	if err := o.commit(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link %s was replaced: %v (%v)", link, fi.Mode(), err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "new\n" {
		t.Errorf("the linked file holds %q (%v), want the export", b, err)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the linked file's permissions: %v (%v), want 0600 kept", fi.Mode(), err)
	}
	assertOnly(t, dir, "2026-11.jsonl", "latest.jsonl", "pipe")

	if _, err := createOut(dir, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("an export to a directory: %v", err)
	}
}
