package turns

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// predecessorReaper is what a store offers to fail the runs of a process
// known to be gone at once, rather than after runs.stale_after.
type predecessorReaper interface {
	RunningOwners(ctx context.Context) ([]string, error)
	ReapRunsOf(ctx context.Context, now time.Time, owner string) (reaped, retried int, err error)
}

// reapPredecessors fails, at start, the runs held by processes of this
// host that are gone (an owner is "host-pid-random", see newOwnerID): a
// bot restarted after a crash answers at once what its predecessor left,
// and a reply it left sending goes out again while the platform still
// remembers its key (Discord's nonce). Another host's processes are left
// to the heartbeat.
func (e *Engine) reapPredecessors(ctx context.Context) {
	pr, ok := e.cfg.Store.(predecessorReaper)
	if !ok {
		return
	}
	owners, err := pr.RunningOwners(ctx)
	if err != nil {
		e.log.Warn("looking for runs a stopped process left", "err", err)
		return
	}
	host, _ := os.Hostname()
	for _, owner := range owners {
		if owner == e.cfg.Owner || !goneFromHost(owner, host) {
			continue
		}
		n, retried, err := pr.ReapRunsOf(ctx, e.cfg.Clock.Now().UTC(), owner)
		if err != nil {
			e.log.Warn("failing the runs of a stopped process", "owner", owner, "err", err)
			continue
		}
		if n > 0 {
			e.log.Warn("failed runs left running by a stopped process of this host", "owner", owner, "count", n, "queued_again", retried)
		}
	}
}

// goneFromHost reports whether owner names a process of host that no
// longer runs: the same pid as this process (a restarted container's
// pid 1) or a pid with no process.
func goneFromHost(owner, host string) bool {
	rest, ok := strings.CutPrefix(owner, host+"-")
	if !ok || host == "" {
		return false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true // owner is not this process's: an earlier one
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	if errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone) {
		return true
	}
	// A killed process its parent has not yet waited for (a supervisor
	// that restarts first and reaps later) still answers signal 0.
	return defunct(pid)
}
