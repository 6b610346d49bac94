// Package nonce makes the nonces the Discord adapter sends with each
// message it creates, so that Discord drops a message it already has.
package nonce

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// MaxLen is the longest nonce Discord accepts.
const MaxLen = 25

// For is the nonce of part i of the send with the given idempotency key:
// "<key>.<i>" when that fits Discord's 25 characters, else a hash of the
// key in its place.
func For(key string, i int) string {
	suffix := "." + strconv.Itoa(i)
	if len(key)+len(suffix) <= MaxLen {
		return key + suffix
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:MaxLen-len(suffix)] + suffix
}

// RandomKey stands in for a missing idempotency key.
func RandomKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "r" + hex.EncodeToString(b[:])
}
