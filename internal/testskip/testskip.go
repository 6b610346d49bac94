// Package testskip skips a test that needs what the machine lacks
// (Chromium, PostgreSQL) and tells the person running the tests. `go test
// ./...` shows a passing package's output only with -v, so a skip would
// go unseen and a missing browser would pass for a tested page: each
// reason is noted once per run, and when the go command ends, one line a
// reason is written to the terminal itself (/dev/tty), after its own
// summary.
package testskip

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Skip skips t, saying why (what is missing) and how to run what it
// skips; the person at the terminal reads it once per `go test` run, at
// its end. Without a terminal (CI) it only skips.
func Skip(t testing.TB, why, enable string) {
	t.Helper()
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		_ = tty.Close()
		tellAtEnd(os.TempDir(), os.Getppid(), why, enable)
	}
	SkipTo(t, io.Discard, os.TempDir(), os.Getppid(), why, enable)
}

// SkipTo is Skip telling w, with Tell's dir and run.
func SkipTo(t testing.TB, w io.Writer, dir string, run int, why, enable string) {
	t.Helper()
	Tell(w, dir, run, why, enable)
	t.Skip("!!! SKIPPED: needs " + why + " (" + enable + ")")
}

// prefix starts the names of a run's files in dir: the markers of the
// reasons told (prefix-<hash>), the lines to write at the end
// (prefix.lines) and the marker of the process that writes them
// (prefix.watch).
func prefix(dir string, run int) string {
	return filepath.Join(dir, "parley-test-skip-"+strconv.Itoa(run))
}

// Tell writes the line about a skip to w unless it was written already
// in this run: run is the go command's process id (every test binary of
// one `go test` is its child), and a marker file in dir records the
// reason for it. It reports whether it wrote.
func Tell(w io.Writer, dir string, run int, why, enable string) bool {
	sum := sha256.Sum256([]byte(why))
	f, err := os.OpenFile(prefix(dir, run)+"-"+hex.EncodeToString(sum[:6]), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false // told already in this run (or the directory is not writable: better silent than repeated)
	}
	_ = f.Close()
	_, err = fmt.Fprintf(w, "parley tests: SKIPPED the tests that need %s: %s\n", why, enable)
	return err == nil
}

// tellAtEnd notes the reason's line for the end of run. The first test
// binary of the run to skip starts a small shell that waits for the go
// command to end, then writes the lines to the terminal and removes the
// run's files. When the parent is no go command (a test binary run by
// hand) the line is written at once.
func tellAtEnd(dir string, run int, why, enable string) {
	p := prefix(dir, run)
	if comm, err := os.ReadFile("/proc/" + strconv.Itoa(run) + "/comm"); err != nil || strings.TrimSpace(string(comm)) != "go" {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			Tell(tty, dir, run, why, enable)
			_ = tty.Close()
		}
		return
	}
	lines, err := os.OpenFile(p+".lines", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	told := Tell(lines, dir, run, why, enable)
	_ = lines.Close()
	if !told {
		return
	}
	watch, err := os.OpenFile(p+".watch", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return // another binary of this run waits already
	}
	_ = watch.Close()
	// Its own process group: a Ctrl-C at the terminal ends the go
	// command, not the shell that reports once it has ended.
	cmd := exec.Command("sh", "-c", `while kill -0 "$1" 2>/dev/null; do sleep 1; done; cat "$2.lines" >/dev/tty; rm -f "$2".lines "$2".watch "$2"-*`,
		"sh", strconv.Itoa(run), p)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Start() == nil {
		_ = cmd.Process.Release()
	}
}
