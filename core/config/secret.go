package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// redacted is what a non-empty Secret shows everywhere but Reveal.
const redacted = "[redacted]"

// Secret holds a token, API key or DSN. It decodes from a YAML string like any
// string, but prints, logs and marshals as "[redacted]" (or "" when empty, so
// a missing secret is still visible as missing). Only Reveal returns the value.
type Secret string

// Reveal returns the secret's value, for handing to the client that needs it.
func (s Secret) Reveal() string { return string(s) }

// shown is the secret's public face.
func (s Secret) shown() string {
	if s == "" {
		return ""
	}
	return redacted
}

// String returns "[redacted]", or "" for an empty secret.
func (s Secret) String() string { return s.shown() }

// GoString returns the %#v form, quoted like a Go string.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.shown()) }

// Format redacts the secret under every verb: %q and %#v quote the redacted
// form, everything else prints it bare.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'q', verb == 'v' && f.Flag('#'):
		fmt.Fprintf(f, "%q", s.shown())
	default:
		_, _ = f.Write([]byte(s.shown()))
	}
}

// LogValue redacts the secret in log/slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.shown()) }

// MarshalJSON redacts the secret in JSON.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.shown()) }

// MarshalYAML redacts the secret in YAML.
func (s Secret) MarshalYAML() (any, error) { return s.shown(), nil }

// MarshalText redacts the secret wherever text encoding is used.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.shown()), nil }

// Interface guards.
var (
	_ fmt.Formatter  = Secret("")
	_ fmt.GoStringer = Secret("")
	_ slog.LogValuer = Secret("")
	_ json.Marshaler = Secret("")
	_ fmt.Stringer   = Secret("")
)

// Scrub returns err with the secret replaced by "[redacted]", should it
// appear in the error's text (HTTP errors quote URLs, and some APIs put
// tokens in the path). A changed error does not unwrap to the original,
// which still holds the secret: classify errors before scrubbing them.
func (s Secret) Scrub(err error) error {
	if err == nil || s == "" || !strings.Contains(err.Error(), string(s)) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), string(s), redacted))
}
