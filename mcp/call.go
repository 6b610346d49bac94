package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleybot/parley/core/llm"
)

// call runs one tool call for the model. Every failure is an error whose
// text the model reads; none fails the turn.
func (s *server) call(ctx context.Context, tool, name string, args json.RawMessage) (out llm.ToolOutput, err error) {
	start := time.Now()
	outcome := OutcomeFailed
	if observe := s.m.opts.Observe; observe != nil {
		defer func() { observe(s.cfg.Name, tool, outcome, time.Since(start)) }()
	}

	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	// The current session and tool, not those of when the tool was
	// offered: the server may have restarted since.
	st, c, entries := s.snapshot()
	if c == nil {
		outcome = OutcomeUnavailable
		return out, s.unavailable(st)
	}
	i := indexOf(entries, tool)
	if i < 0 {
		outcome = OutcomeUnavailable
		return out, fmt.Errorf("%s is no longer offered by the %s server", name, s.cfg.Name)
	}
	if rs := entries[i].schema; rs != nil {
		if err := validateArgs(rs, args); err != nil {
			outcome = OutcomeInvalidArguments
			return out, fmt.Errorf("invalid arguments for %s: %v", name, err)
		}
	}

	callCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	res, err := c.session.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		outcome, err = s.callFailure(ctx, callCtx, c, name, err)
		return out, err
	}
	var sh *shelf
	if !res.IsError {
		// The model reads only the error of a failed call: its images
		// get no handle.
		sh = shelfOf(ctx)
	}
	out = convertResult(res, s.m.opts.Vision, s.m.opts.MaxResultChars, sh)
	if res.IsError {
		outcome = OutcomeToolError
		text := strings.TrimSpace(out.Text)
		if text == "" || text == noOutput {
			text = name + " failed without saying why"
		}
		return llm.ToolOutput{}, errors.New(text)
	}
	outcome = OutcomeOK
	return out, nil
}

// callFailure says why a call got no result, and its outcome.
func (s *server) callFailure(ctx, callCtx context.Context, c *conn, name string, err error) (string, error) {
	var wire *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		// The turn gave up (its deadline, or it was cancelled).
		outcome := OutcomeFailed
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			outcome = OutcomeTimeout
		}
		return outcome, fmt.Errorf("%s was abandoned: %w", name, ctx.Err())
	case c.ctx.Err() != nil:
		// The connection is closing (the server went down, or Stop).
		return OutcomeUnavailable, s.unavailable(s.state())
	case callCtx.Err() != nil:
		return OutcomeTimeout, fmt.Errorf("%s did not answer within %s", name, formatDuration(s.cfg.Timeout))
	case errors.As(err, &wire):
		// The server answered with an error (unknown tool, bad params).
		return OutcomeFailed, fmt.Errorf("%s failed: %s", name, s.redact.reason(wire.Message))
	case c.ended() || lostConnection(err):
		return OutcomeUnavailable, s.unavailable(s.state())
	default:
		return OutcomeFailed, fmt.Errorf("%s failed: %s", name, s.redact.reason(err.Error()))
	}
}

// lostConnection reports whether err means the session is gone.
func lostConnection(err error) bool {
	var netErr net.Error
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, sdk.ErrSessionMissing) || errors.As(err, &netErr)
}

// unavailable is the error for a call to a server that is not up.
func (s *server) unavailable(state string) error {
	reason, down := strings.CutPrefix(state, stateDown)
	switch {
	case state == StateStarting:
		reason = "it is still starting"
	case !down:
		reason = "the connection to it was lost"
	}
	return fmt.Errorf("the %s server is not available right now: %s", s.cfg.Name, reason)
}

// indexOf returns the index of the entry for tool, or -1.
func indexOf(entries []*toolEntry, tool string) int {
	for i, e := range entries {
		if e.tool == tool {
			return i
		}
	}
	return -1
}
