package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is one session with a server, from initialize to close.
type conn struct {
	session *sdk.ClientSession
	// relist is signalled when the server says its tools changed.
	relist chan struct{}
	// done is closed when the session has ended.
	done chan struct{}
	// proc is the server's process (stdio only).
	proc *process
	// closeIdle releases the HTTP connections (HTTP only).
	closeIdle func()
	grace     time.Duration
	// ctx ends when the connection starts closing; calls in flight end
	// with it rather than hold the close up (the SDK's close waits for
	// them).
	ctx    context.Context
	cancel context.CancelFunc
}

// connect opens a session with s and lists its tools, within InitTimeout.
// The error is a short reason, fit for State after redaction.
func (m *Manager) connect(ctx context.Context, s *server) (*conn, []*toolEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.InitTimeout)
	defer cancel()
	c, err := m.dial(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	entries, err := s.list(ctx, c)
	if err != nil {
		c.close()
		return nil, nil, m.failure(ctx, "tools/list", err)
	}
	return c, entries, nil
}

// dial starts (stdio) or reaches (HTTP) the server and initializes a
// session. On failure nothing of the attempt is left running.
func (m *Manager) dial(ctx context.Context, s *server) (*conn, error) {
	c := &conn{relist: make(chan struct{}, 1), done: make(chan struct{}), grace: m.grace}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	client := sdk.NewClient(&sdk.Implementation{Name: "parley", Version: version()}, &sdk.ClientOptions{
		Logger: slog.New(redactHandler{Handler: s.log.Handler(), r: s.redact}),
		// No roots, sampling or elicitation: Parley only calls tools.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			// Never block the session's reader: the loop re-lists.
			select {
			case c.relist <- struct{}{}:
			default:
			}
		},
	})
	var err error
	switch {
	case m.dialHook != nil:
		err = m.dialTest(ctx, s, client, c)
	case s.cfg.Command != "":
		err = m.dialStdio(ctx, s, client, c)
	default:
		err = m.dialHTTP(ctx, s, client, c)
	}
	if err != nil {
		c.cancel()
		return nil, err
	}
	return c, nil
}

// dialTest connects over the transport the test hook gives.
func (m *Manager) dialTest(ctx context.Context, s *server, client *sdk.Client, c *conn) error {
	tr, err := m.dialHook(ctx, s.cfg.Name)
	if err != nil {
		return err
	}
	c.session, err = client.Connect(ctx, tr, nil)
	if err != nil {
		return m.failure(ctx, "initialize", err)
	}
	return nil
}

// failure says what went wrong in phase, as a reason for State.
func (m *Manager) failure(ctx context.Context, phase string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer to %s within %s", phase, formatDuration(m.opts.InitTimeout))
	}
	return fmt.Errorf("%s failed: %w", phase, err)
}

// close ends the session and everything it started. It returns what
// closing said (for a process: how it exited).
func (c *conn) close() error {
	c.cancel()
	if c.proc == nil {
		err := c.session.Close()
		if c.closeIdle != nil {
			c.closeIdle()
		}
		return err
	}
	err := c.proc.closeEscalating(c.session.Close, c.grace)
	c.proc.finish()
	return err
}

// endReason says why a session that was up ended: waitErr is what
// session.Wait returned, closeErr what closing it did.
func (c *conn) endReason(waitErr, closeErr error) string {
	if c.proc != nil {
		return c.proc.exitReason(closeErr, waitErr)
	}
	if waitErr != nil {
		return "connection lost: " + waitErr.Error()
	}
	return "the server closed the connection"
}

// ended reports whether the session has ended.
func (c *conn) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// version is Parley's version, sent as the client's in initialize.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// formatDuration writes d as a person would: 30s, 2m, 1m30s, 250ms.
func formatDuration(d time.Duration) string {
	s := d.String()
	if d >= time.Minute && d%time.Minute == 0 {
		s = s[:len(s)-2] // "2m0s" → "2m"
	}
	if d >= time.Hour && d%time.Hour == 0 {
		s = s[:len(s)-2] // "1h0m" → "1h"
	}
	return s
}
