package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// process is a stdio server's process, in a process group of its own so
// that stopping it ends its children too.
type process struct {
	pid    int
	stderr *stderrLog
}

// dialStdio starts the server's command and initializes a session over
// its stdin and stdout.
func (m *Manager) dialStdio(ctx context.Context, s *server, client *sdk.Client, c *conn) error {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Env)) {
		cmd.Env = append(cmd.Env, k+"="+s.cfg.Env[k])
	}
	setProcAttrs(cmd)
	// A pipe of our own rather than cmd.Stderr = writer: exec would copy
	// through a goroutine that Wait blocks on while any child of the
	// server still holds the pipe open.
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("cannot start %s: %w", s.cfg.Command, err)
	}
	cmd.Stderr = w
	// Read from the start: a server that fills the pipe before answering
	// initialize would otherwise block.
	p := &process{stderr: readStderr(r, s)}
	tr := &capturingTransport{Transport: &sdk.CommandTransport{Command: cmd, TerminateDuration: m.grace}}
	session, err := client.Connect(ctx, tr, nil)
	_ = w.Close() // the child has its own copy
	if cmd.Process != nil {
		p.pid = cmd.Process.Pid
	}
	if err == nil {
		c.session, c.proc = session, p
		return nil
	}
	if tr.conn == nil { // it never started
		p.finish()
		return fmt.Errorf("cannot start %s: %w", s.cfg.Command, err)
	}
	// Connect closes the connection on most failures, not on all; closing
	// again is harmless and returns how the process exited.
	exitErr := p.closeEscalating(tr.conn.Close, m.grace)
	p.finish()
	reason := m.failure(ctx, "initialize", err).Error()
	if strings.Contains(reason, "invalid character") {
		reason += " (the server wrote something other than JSON-RPC to stdout)"
	}
	if exitErr != nil && ctx.Err() == nil {
		reason += "; " + p.exitReason(exitErr, nil)
	}
	return errors.New(reason)
}

// capturingTransport keeps the connection its transport made, so that a
// failed Connect can still be cleaned up.
type capturingTransport struct {
	sdk.Transport
	conn sdk.Connection
}

func (t *capturingTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	t.conn = c
	return c, err
}

// closeEscalating calls closeFn, which closes stdin and waits for the
// process (a well-behaved server exits then). If it has not returned after
// grace, the process group gets SIGTERM, and after grace again SIGKILL.
func (p *process) closeEscalating(closeFn func() error, grace time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- closeFn() }()
	if p.pid <= 0 {
		return <-done
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	for _, force := range []bool{false, true} {
		select {
		case err := <-done:
			return err
		case <-t.C:
		}
		signalGroup(p.pid, force)
		t.Reset(grace)
	}
	return <-done
}

// finish ends what is left of the process group (children the server
// left behind) and the stderr reader.
func (p *process) finish() {
	if p.pid > 0 {
		signalGroup(p.pid, true)
	}
	p.stderr.finish(time.Second)
}

// exitReason says how the process ended: exitErr is what waiting for it
// returned, waitErr what the session's reader saw.
func (p *process) exitReason(exitErr, waitErr error) string {
	var b strings.Builder
	var ee *exec.ExitError
	switch {
	case errors.As(exitErr, &ee):
		fmt.Fprintf(&b, "the server exited (%s)", ee.ProcessState.String())
	case exitErr != nil:
		fmt.Fprintf(&b, "the server did not exit cleanly: %v", exitErr)
	case waitErr != nil:
		fmt.Fprintf(&b, "the session broke: %v", waitErr)
	default:
		b.WriteString("the server exited")
	}
	if waitErr != nil && exitErr != nil {
		fmt.Fprintf(&b, " after: %v", waitErr)
	}
	if last := p.stderr.lastLine(); last != "" && exitErr != nil {
		fmt.Fprintf(&b, "; its last stderr line: %s", last)
	}
	return b.String()
}
