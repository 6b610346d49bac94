package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxToolName is OpenAI's limit on a tool's name (^[a-zA-Z0-9_-]{1,64}$).
const maxToolName = 64

// toolName is the name the model sees for a server's tool: SERVER__TOOL,
// with every character OpenAI does not allow replaced by "_", and
// shortened (deterministically) when longer than 64.
func toolName(server, tool string) string {
	full := server + "__" + tool
	name := sanitize(full)
	if len(name) > maxToolName {
		return hashed(name, full)
	}
	return name
}

// uniqueName is the name given instead when toolName is taken by another
// tool (names that differ only in replaced characters): shortened with a
// hash of the original, which is unique.
func uniqueName(server, tool string) string {
	full := server + "__" + tool
	return hashed(sanitize(full), full)
}

// hashed keeps what fits of name and appends "_" and 8 hex digits of the
// SHA-256 of the original full name.
func hashed(name, full string) string {
	sum := sha256.Sum256([]byte(full))
	keep := maxToolName - 9
	if len(name) < keep {
		keep = len(name)
	}
	return name[:keep] + "_" + hex.EncodeToString(sum[:4])
}

// sanitize replaces every character outside [a-zA-Z0-9_-] with "_" (one
// per character, not per byte). The result is ASCII, so byte slicing is
// safe.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}
