package core

import "errors"

// ErrBlockedByAutomations is returned when a conversation is to be deleted
// without confirmation while recurring jobs are enabled on it: deleting it
// would silently stop them.
var ErrBlockedByAutomations = errors.New("the conversation has recurring jobs bound to it")

// Automation is a recurring job (kind agent_turn) bound to a conversation,
// as shown to whoever is deleting the conversation.
type Automation struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Enabled is true while the job is pending or sending; a cancelled or
	// failed one never runs again.
	Enabled bool `json:"enabled"`
}

// Deletion is the outcome of deleting a conversation.
type Deletion struct {
	// Deleted is true when the conversation and everything of it are gone.
	Deleted bool
	// Automations are the conversation's recurring jobs, enabled or not,
	// when they blocked the deletion; empty otherwise (a deletion that went
	// ahead reports only how many jobs went with it, in Jobs).
	Automations []Automation
	// Jobs is how many jobs of every kind were deleted with the
	// conversation.
	Jobs int
}

// Blocked reports whether enabled recurring jobs kept the conversation from
// being deleted.
func (d Deletion) Blocked() bool { return !d.Deleted && len(d.Automations) > 0 }
