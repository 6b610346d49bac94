package mcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInputSchema(t *testing.T) {
	t.Parallel()
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(inputSchema(nil)), "none given")
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(inputSchema(true)), "not an object")
	require.JSONEq(t, `{"type":"object","properties":{"a":{"type":"string"}}}`,
		string(inputSchema(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}})))
}

func TestCompileAndValidate(t *testing.T) {
	t.Parallel()
	rs, err := compileSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`))
	require.NoError(t, err)
	require.NoError(t, validateArgs(rs, json.RawMessage(`{"a":1,"b":2}`)))
	err = validateArgs(rs, json.RawMessage(`{"a":1}`))
	require.ErrorContains(t, err, `"b"`)
	err = validateArgs(rs, json.RawMessage(`{"a":"one","b":2}`))
	require.ErrorContains(t, err, "a")

	_, err = compileSchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`))
	require.Error(t, err, "a dangling $ref does not compile")
	_, err = compileSchema(json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`))
	require.ErrorContains(t, err, "unsupported $schema")
	_, err = compileSchema(json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`))
	require.NoError(t, err)
}
