package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCIRunInstallsBuildTools runs .ci/run as on a fresh Debian machine
// with Postgres and Redis but no make, C compiler or foreman: every
// command it may call is a stub on PATH (apt-get records what it is asked
// and "installs" the stubs of make, gcc and foreman), so nothing is
// installed for real. It must install them, then run the tests with make.
func TestCIRunInstallsBuildTools(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(root, "stubs")
	log := filepath.Join(root, "calls.log")
	for _, dir := range []string{bin, filepath.Join(root, ".ci")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".ci", "run"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	// Real tools the script needs to run at all.
	for _, tool := range []string{"id", "dirname", "chmod"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s: %v", tool, err)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	record := `echo "$(basename_of "$0") $*" >> ` + log + "\n"
	stub := func(name, body string) {
		src := "#!/bin/sh\nbasename_of() { echo \"${1##*/}\"; }\n" + record + body
		if err := os.WriteFile(filepath.Join(bin, name), []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// apt-get "installs" a package by putting its command's stub on PATH.
	stub("apt-get", `for p in "$@"; do
  case "$p" in
    make|gcc|ruby-foreman) cmd=${p#ruby-}; printf '#!/bin/sh\necho "%s $*" >> `+log+`\n' "$cmd" > `+bin+`/"$cmd"; chmod +x `+bin+`/"$cmd" ;;
  esac
done
`)
	for _, name := range []string{"ls", "pg_isready", "runuser", "redis-server"} {
		stub(name, "exit 0\n")
	}
	stub("sudo", "exec \"$@\"\n") // as a user other than root
	stub("go", "echo 'go version go1.99 linux/amd64'\n")

	cmd := exec.Command("/bin/bash", filepath.Join(root, ".ci", "run"))
	cmd.Env = []string{"PATH=" + bin, "HOME=" + root}
	out, err := cmd.CombinedOutput()
	calls, _ := os.ReadFile(log)
	if err != nil {
		t.Fatalf(".ci/run on a machine without make and gcc: %v\n%s\ncalls:\n%s", err, out, calls)
	}
	var installed []string
	ranMake := false
	for _, line := range strings.Split(string(calls), "\n") {
		// apt-get [-o option=value ...] install packages...
		if rest, ok := strings.CutPrefix(line, "apt-get "); ok {
			if _, pkgs, ok := strings.Cut(" "+rest+" ", " install "); ok {
				installed = append(installed, strings.Fields(pkgs)...)
			}
		}
		ranMake = ranMake || line == "make test"
	}
	for _, want := range []string{"make", "gcc", "libc6-dev", "ruby-foreman"} {
		if !strings.Contains(" "+strings.Join(installed, " ")+" ", " "+want+" ") {
			t.Errorf(".ci/run did not install %s; it installed %v", want, installed)
		}
	}
	if !ranMake {
		t.Errorf(".ci/run did not run make test:\n%s", calls)
	}
}
