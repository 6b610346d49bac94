// Package access says who may talk to a bot and what they may touch:
// its owners, its bot.dm_policy, and the pairing codes that let a
// stranger in once an owner approves them.
package access

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Policies of bot.dm_policy.
const (
	// Open lets everyone in, or only allow_users when it lists some.
	Open = "open"
	// Allowlist lets in allow_users and owners only.
	Allowlist = "allowlist"
	// Pairing lets in those, and strangers an owner approved.
	Pairing = "pairing"
)

// CodeTTL is how long a pairing code is valid, and how often one user
// may get a new one.
const CodeTTL = time.Hour

// MaxPendingCodes bounds the codes waiting at once on one platform of a
// bot: a flood of strangers gets no more codes, and is ignored.
const MaxPendingCodes = 50

// Gate decides who may talk to a bot.
type Gate struct {
	policy string
	owners map[string]bool
	allow  map[string]bool
}

// NewGate is the gate of bot.dm_policy, bot.owners and bot.allow_users
// (each "platform:user_id").
func NewGate(policy string, owners, allow []string) *Gate {
	g := &Gate{policy: policy, owners: map[string]bool{}, allow: map[string]bool{}}
	for _, u := range owners {
		g.owners[u] = true
	}
	for _, u := range allow {
		g.allow[u] = true
	}
	return g
}

// Decision is what the gate says of a user.
type Decision int

const (
	// Admit: the user talks to the bot.
	Admit Decision = iota
	// Ignore: the user's messages are dropped.
	Ignore
	// Pair: the user is let in only if an owner approved them; else they
	// get a code.
	Pair
)

// Decide says what becomes of a message of user ("platform:user_id").
func (g *Gate) Decide(platform, userID string) Decision {
	u := platform + ":" + userID
	switch {
	case g == nil, g.owners[u], g.allow[u]:
		return Admit
	case g.policy == Pairing:
		return Pair
	case g.policy == Allowlist, len(g.allow) > 0:
		return Ignore
	}
	return Admit
}

// IsOwner reports whether the user is one of the bot's owners.
func (g *Gate) IsOwner(platform, userID string) bool {
	return g != nil && g.owners[platform+":"+userID]
}

// HasOwners reports whether the bot names any owner.
func (g *Gate) HasOwners() bool { return g != nil && len(g.owners) > 0 }

// Request is a pairing as the store keeps it: a user unknown to a bot
// under pairing, with the code they were given to pass to the owner, and
// what was decided. An approval is the row itself: it outlives restarts
// and config edits.
type Request struct {
	ID       int64
	BotID    string
	Platform string
	UserID   string
	// ThreadID is the conversation the code was given in, where an
	// approval is announced.
	ThreadID    string
	DisplayName string
	Code        string
	Status      string // Pending, Approved or Denied
	CreatedAt   time.Time
	ExpiresAt   time.Time
	DecidedAt   *time.Time
	// DecidedBy says who let them in or not: "cli", "console" or the
	// owner's "platform:user_id".
	DecidedBy string
}

// Statuses of a Request.
const (
	Pending  = "pending"
	Approved = "approved"
	Denied   = "denied"
)

// Metadata keys of the messages of a stranger under pairing: what they
// wrote before they were let in (kept, never answered, never in a
// prompt), and the bot's message with their code.
const (
	UnpairedKey = "unpaired"
	NoticeKey   = "pairing_notice"
)

// ErrFull is a code asked for while as many as MaxPendingCodes wait on
// the platform: the stranger is ignored.
var ErrFull = errors.New("too many pairing codes are waiting for the owner")

// codeAlphabet is what a code is made of: no 0, O, 1 or I, which people
// misread when they copy a code from one app to another.
const codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// NewCode is 8 characters of the alphabet: 40 bits, drawn without bias
// (the alphabet has 32 letters).
func NewCode() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a pairing code: %w", err)
	}
	for i := range b {
		b[i] = codeAlphabet[b[i]%32]
	}
	return string(b[:]), nil
}

// NormalizeCode is code as stored: upper case, without the spaces or
// dashes a user may add when they copy it.
func NormalizeCode(code string) string {
	return strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(code)))
}
