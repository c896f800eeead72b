package pgtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cluster is a throwaway PostgreSQL cluster living in a temporary
// directory. It stops, and its directory is removed, when the test process
// exits, however it exits: a watchdog shell started with the server waits
// for its stdin, a pipe from this process, to close.
type cluster struct {
	url string
	dir string
	// lifeline is the write end of the watchdog's stdin. It is never
	// written or closed; it must stay reachable, since the pipe closes,
	// stopping the cluster, when it is garbage collected.
	lifeline io.WriteCloser
}

// watchdog runs the server in the background and, when stdin reaches end
// of file (the shell gives background jobs /dev/null as stdin, hence fd 3), stops it (fast shutdown) and removes the cluster's directory. If
// the server exits by itself (it could not start, say), the watchdog exits
// with status 1 and leaves the directory for another try.
// Arguments: postgres binary, data directory, port, directory to remove.
const watchdog = `
exec 3<&0
"$0" -D "$1" -p "$2" -k "$1" -c listen_addresses=127.0.0.1 \
	-c fsync=off -c synchronous_commit=off -c full_page_writes=off \
	-c max_connections=200 </dev/null >>"$3/server.log" 2>&1 &
pid=$!
(cat <&3 >/dev/null; kill -INT "$pid" 2>/dev/null) &
watcher=$!
wait "$pid"
if kill -0 "$watcher" 2>/dev/null; then
	kill "$watcher"
	exit 1
fi
rm -rf "$3"
`

// startCluster initialises and starts a cluster on a free loopback port.
// As root it runs the server as the postgres user, since initdb refuses to
// run as root.
func startCluster() (*cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "updown-pgtest-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, lastLines(string(out), 5))
	}

	var lastErr error
	for range 5 {
		c, err := launch(bin, dir, data, cred)
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// launch starts the server under its watchdog and waits until it answers.
func launch(bin, dir, data string, cred *syscall.Credential) (*cluster, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", watchdog, filepath.Join(bin, "postgres"), data, strconv.Itoa(port), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	cmd.Dir = dir
	lifeline, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	c := &cluster{
		url:      fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		dir:      dir,
		lifeline: lifeline,
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := ping(c.url); err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			_ = lifeline.Close()
			return nil, fmt.Errorf("postgres did not start: %s", c.log())
		}
		select {
		case <-exited:
			_ = lifeline.Close()
			return nil, fmt.Errorf("postgres exited: %s", c.log())
		default:
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// log returns the end of the server's log.
func (c *cluster) log() string {
	b, err := os.ReadFile(filepath.Join(c.dir, "server.log"))
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), 5)
}

// findBinaries returns the directory of initdb and postgres: the newest
// Debian-style /usr/lib/postgresql/<version>/bin, else the one of initdb on
// PATH.
func findBinaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL binaries (initdb) installed")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&0o111 != 0
}

// serverCredential returns who the server runs as: nil (this process's
// user) unless this process is root, then the postgres user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and no postgres user to run the server as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
