package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	openai "github.com/sashabaranov/go-openai"
)

// Error is the error Client and Transcriber methods return.
type Error struct {
	// StatusCode is the HTTP status of the final attempt, or 0 when no
	// response was received (connection error, timeout, malformed body).
	StatusCode int
	// Message describes the failure, e.g.
	// "llm: 500 Internal Server Error after 4 attempts: overloaded".
	Message string
	// Retryable reports whether trying the same request later may succeed
	// (rate limits, server errors, connection errors, timeouts).
	Retryable bool
	// Timeout reports that an attempt ran past Config.Timeout.
	Timeout bool
	// Err is the underlying cause when there is one worth matching with
	// errors.Is, e.g. context.Canceled.
	Err error

	// health is the Health state this failure puts the client in; "" leaves
	// the state as it was (the caller cancelled, or the request never left).
	health string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// maxErrorText bounds how much of a server's error text goes into a message.
const maxErrorText = 500

// redactor removes the API key from text before it reaches an error or a log.
type redactor string

func (r redactor) clean(s string) string {
	if len(r) >= 4 {
		s = strings.ReplaceAll(s, string(r), "[redacted]")
	}
	if len(s) > maxErrorText {
		s = s[:maxErrorText] + "…"
	}
	return s
}

// redactedError hides the API key in an error's text. It keeps the chain
// for errors.Is (context.Canceled, syscall errors) only when no error in it
// mentions the key, so unwrapping cannot reveal it either.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

func (r redactor) wrap(err error) error {
	if err == nil {
		return nil
	}
	cause := err
	if len(r) > 0 {
		for e := err; e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), string(r)) {
				cause = nil
				break
			}
		}
	}
	return &redactedError{msg: r.clean(err.Error()), cause: cause}
}

// attemptsText renders " after N attempts" when there was more than one.
func attemptsText(n int) string {
	if n > 1 {
		return fmt.Sprintf(" after %d attempts", n)
	}
	return ""
}

// asError finds an *Error in err's chain.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// convertError turns whatever go-openai or the transport returned for op
// (e.g. "chat completion") into an *Error without the API key.
func (c *conn) convertError(ctx context.Context, op string, err error, attempts int) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return c.canceled(ctxErr)
	}
	if e, ok := asError(err); ok {
		return e
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return c.statusError(apiErr.HTTPStatusCode, apiErr.HTTPStatus, apiErr.Message, attempts, err)
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return c.statusError(reqErr.HTTPStatusCode, reqErr.HTTPStatus, string(reqErr.Body), attempts, err)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &Error{
			StatusCode: http.StatusOK,
			Message:    "llm: malformed response: " + c.redact.clean(err.Error()),
			Err:        c.redact.wrap(err),
			health:     HealthServerError,
		}
	}
	return &Error{
		Message: "llm: " + op + ": " + c.redact.clean(err.Error()),
		Err:     c.redact.wrap(err),
		health:  otherHealth(err),
	}
}

// otherHealth classifies an error that is neither a status nor a malformed
// body: a network failure while reading the answer makes the server
// unreachable; anything else (go-openai refusing a request before sending
// it) says nothing about the server.
func otherHealth(err error) string {
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, syscall.ECONNRESET) {
		return HealthUnreachable
	}
	return ""
}

func (c *conn) statusError(code int, status, msg string, attempts int, err error) error {
	if status == "" {
		status = fmt.Sprintf("%d %s", code, http.StatusText(code))
	}
	text := fmt.Sprintf("llm: %s%s", status, attemptsText(attempts))
	if msg != "" {
		text += ": " + c.redact.clean(msg)
	}
	if (code == http.StatusUnauthorized || code == http.StatusForbidden) && c.cfg.AuthHint != "" {
		text += "; " + c.redact.clean(c.cfg.AuthHint)
	}
	return &Error{
		StatusCode: code,
		Message:    text,
		Retryable:  retryableStatus(code),
		Err:        c.redact.wrap(err),
		health:     statusHealth(code),
	}
}

func (c *conn) canceled(err error) error {
	return &Error{Message: "llm: request canceled: " + err.Error(), Err: err}
}
