package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/parleybot/parley/core/llm/internal/output"
)

// ServiceConfig is what a Transcriber, a Speaker and an Imager are
// configured with: TranscriberConfig's fields, Model being the model of
// the service (e.g. gpt-4o-mini-tts, gpt-image-1).
type ServiceConfig = TranscriberConfig

// serviceConn validates cfg, applies defaults and builds the connection of
// the service op names.
func serviceConn(op string, cfg ServiceConfig) (conn, error) {
	if cfg.Model == "" {
		return conn{}, errors.New("llm: " + op + ": no model")
	}
	lim, q := cfg.ShareLimits.shared()
	cn, _, err := newConn(Config{
		BaseURL:    cfg.BaseURL,
		APIKey:     cfg.APIKey,
		Model:      cfg.Model,
		Timeout:    cfg.Timeout,
		MaxRetries: cfg.MaxRetries,
		HTTPClient: cfg.HTTPClient,
		Logger:     cfg.Logger,
		AuthHint:   cfg.AuthHint,
		Sleep:      cfg.Sleep,
	}, lim, q)
	return cn, err
}

// failAs converts err as the Client does and names op in the message, so
// a log line says which call failed. An error of this package's own
// checks (output.ErrAnswer) is a malformed answer.
func (c *conn) failAs(ctx context.Context, op string, err error, attempts int) error {
	if _, ok := asError(err); !ok && ctx.Err() == nil && errors.Is(err, output.ErrAnswer) {
		return &Error{StatusCode: http.StatusOK, Message: "llm: " + op + ": " + c.redact.clean(err.Error()),
			Err: c.redact.wrap(err), health: HealthServerError}
	}
	err = c.convertError(ctx, op, err, attempts)
	e, ok := err.(*Error)
	if !ok || strings.HasPrefix(e.Message, "llm: "+op) {
		return err
	}
	// A copy: the transport's *Error may be the one converted.
	named := *e
	named.Message = "llm: " + op + ": " + strings.TrimPrefix(e.Message, "llm: ")
	return &named
}
