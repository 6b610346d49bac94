//go:build linux

package soak

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// readyTimeout bounds a replica's start-up (store, migrations, adapters).
const readyTimeout = 30 * time.Second

// stopTimeout bounds a replica's clean stop: parley drains for up to 30 s.
const stopTimeout = 45 * time.Second

var listening = regexp.MustCompile(`http server listening.* addr=(\S+)`)

// replica is one `parley run -c <cfg>` process, restarted after each kill.
// Its output goes to its own log file, appended to across restarts.
type replica struct {
	idx     int
	bin     string
	cfgPath string
	logPath string
	host    string

	gen int       // starts so far
	cmd *exec.Cmd // the current process, nil before the first start
	// done is closed once the current process has exited, reaped when it
	// is closed after it.
	done, reaped chan struct{}
	addr         string
	// lateReap leaves a killed process a zombie until the next one
	// serves, as a supervisor that restarts before it reaps does: the
	// new process must count it gone all the same. release lets the
	// current process be reaped once it has exited.
	lateReap bool
	release  chan struct{}
}

func newReplica(idx int, bin, cfgPath, logPath string) *replica {
	host, _ := os.Hostname()
	return &replica{idx: idx, bin: bin, cfgPath: cfgPath, logPath: logPath, host: host}
}

// running reports whether the current process has not exited.
func (r *replica) running() bool {
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// pid is the current process's id.
func (r *replica) pid() int { return r.cmd.Process.Pid }

// ownerPrefix is how the jobs this process claims name their owner:
// core's default owner id is "<host>-<pid>-<random>".
func (r *replica) ownerPrefix() string { return fmt.Sprintf("%s-%d-", r.host, r.pid()) }

// owns reports whether a job's owner is this replica's current process.
func (r *replica) owns(owner string) bool {
	return r.running() && strings.HasPrefix(owner, r.ownerPrefix())
}

// start starts the process and waits until it serves HTTP (which parley
// does once its adapters and dispatcher run).
func (r *replica) start(t testing.TB) {
	t.Helper()
	require.False(t, r.running(), "replica %d already running", r.idx)
	f, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	st, err := f.Stat()
	require.NoError(t, err)
	from := st.Size()
	r.gen++
	_, _ = fmt.Fprintf(f, "=== soak: replica %d start %d at %s\n", r.idx, r.gen, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(r.bin, "run", "-c", r.cfgPath)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan if the test binary dies
	err = cmd.Start()
	_ = f.Close() // the child has its own descriptor
	require.NoError(t, err)
	prev := r.release
	r.cmd, r.done, r.reaped, r.addr = cmd, make(chan struct{}), make(chan struct{}), ""
	r.release = make(chan struct{})
	if !r.lateReap {
		close(r.release)
	}
	done, reaped, release := r.done, r.reaped, r.release
	go func() {
		// Wait for the exit without reaping it (waitid WNOWAIT), so that
		// the process can stay a zombie until released.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(done)
		<-release
		_ = cmd.Wait() // sets cmd.ProcessState, read once reaped is closed
		close(reaped)
	}()
	defer func() {
		if prev != nil {
			closeOnce(prev) // the new process serves: reap the old one
		}
	}()

	deadline := time.Now().Add(readyTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := listening.FindSubmatch(r.logSince(from)); m != nil {
			r.addr = string(m[1])
			return
		}
		select {
		case <-done:
			closeOnce(release)
			<-reaped
			t.Fatalf("replica %d (start %d) exited during start-up: %v\n%s", r.idx, r.gen, cmd.ProcessState, r.logSince(from))
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %d (start %d) not serving after %v:\n%s", r.idx, r.gen, readyTimeout, r.logSince(from))
		}
	}
}

// logSince is the log file from byte offset from.
func (r *replica) logSince(from int64) []byte {
	b, err := os.ReadFile(r.logPath)
	if err != nil || int64(len(b)) < from {
		return nil
	}
	return b[from:]
}

// freeze stops the process (SIGSTOP) so that the database shows exactly
// what it had in flight; kill must follow. kill(2) returns before the
// signal has stopped every thread (one may be finishing a commit), so it
// waits until /proc shows them all stopped.
func (r *replica) freeze() error {
	if err := syscall.Kill(r.pid(), syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		stopped, err := allStopped(r.pid())
		if err != nil || stopped {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %d (pid %d) not stopped 5s after SIGSTOP", r.idx, r.pid())
		}
		time.Sleep(time.Millisecond) // a condition polled with a deadline
	}
}

// allStopped reports whether every thread of pid is stopped: state T in
// /proc/<pid>/task/<tid>/stat, after the command name in parentheses.
func allStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // the thread is gone
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return false, fmt.Errorf("unreadable /proc/%d/task/%s/stat: %q", pid, task.Name(), b)
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return false, nil
		}
	}
	return true, nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *replica) kill(t testing.TB) {
	t.Helper()
	if !r.running() {
		return
	}
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("killing replica %d: %v", r.idx, err)
	}
	select {
	case <-r.done:
	case <-time.After(stopTimeout):
		t.Errorf("replica %d (pid %d) still alive %v after SIGKILL", r.idx, r.pid(), stopTimeout)
	}
}

// stop sends SIGTERM and expects a clean exit (status 0) within
// stopTimeout.
func (r *replica) stop(t testing.TB) {
	t.Helper()
	if !r.running() {
		return
	}
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-r.done:
		closeOnce(r.release)
		<-r.reaped
		if !r.cmd.ProcessState.Success() {
			t.Errorf("replica %d (pid %d) stopped with %v; log %s", r.idx, r.pid(), r.cmd.ProcessState, r.logPath)
		}
	case <-time.After(stopTimeout):
		t.Errorf("replica %d (pid %d) did not stop %v after SIGTERM; log %s", r.idx, r.pid(), stopTimeout, r.logPath)
		r.kill(t)
	}
}

// logHas counts the lines of the whole log (every start) containing s.
func (r *replica) logHas(s string) int {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(s))
}

// closeOnce closes c unless it is closed already.
func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// reapAll lets the last process be reaped once it has exited (a killed
// one left a zombie by lateReap).
func (r *replica) reapAll() {
	if r.release != nil {
		closeOnce(r.release)
	}
}
