package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// emptySchema is the schema of a tool whose server gives none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// inputSchema is the JSON of a tool's input schema as the model gets it.
func inputSchema(v any) json.RawMessage {
	if v == nil {
		return emptySchema
	}
	b, err := json.Marshal(v)
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return emptySchema
	}
	return b
}

// compileSchema prepares a schema for validating arguments.
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("reading the schema: %w", err)
	}
	switch s.Schema {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
	default:
		// Validate would fail every call; the server validates anyway.
		return nil, fmt.Errorf("unsupported $schema %q", s.Schema)
	}
	return s.Resolve(nil)
}

// validateArgs checks the model's arguments against a compiled schema.
func validateArgs(rs *jsonschema.Resolved, args json.RawMessage) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if err := rs.Validate(v); err != nil {
		// "validating root: " says nothing to the model.
		return errors.New(strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}
