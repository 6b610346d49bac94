package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
)

// PairingDesk is where owners answer the codes of strangers under
// bot.dm_policy: pairing; the store's Directory implements it.
type PairingDesk interface {
	DecidePairing(ctx context.Context, code string, approve bool, by string, now time.Time) (access.Request, error)
	Pairings(ctx context.Context, now time.Time, decided bool) ([]access.Request, error)
}

// ownerCommands are the commands only the bot's owners see and may run.
func (h *Handler) ownerCommands() []command {
	if !h.cfg.Gate.HasOwners() || h.cfg.Pairings == nil {
		return nil
	}
	d := desk{h}
	return []command{
		{name: "approve", description: "Let in the user who got this pairing code", usage: "/approve CODE", run: d.approve, owners: true},
		{name: "deny", description: "Turn away the user who got this pairing code", usage: "/deny CODE", run: d.deny, owners: true},
		{name: "pairing", description: "List the pairing codes waiting for your answer", usage: "/pairing", run: d.waiting, owners: true},
	}
}

// isOwner reports whether conv is an owner's own conversation.
func (h *Handler) isOwner(conv core.Conversation) bool {
	return h.cfg.Gate.IsOwner(string(conv.Platform), conv.ChannelUserID)
}

// desk is the owners' commands about pairing codes.
type desk struct{ h *Handler }

func (d desk) approve(ctx context.Context, conv core.Conversation, code string) (core.CommandReply, error) {
	return d.decide(ctx, conv, code, true)
}

func (d desk) deny(ctx context.Context, conv core.Conversation, code string) (core.CommandReply, error) {
	return d.decide(ctx, conv, code, false)
}

// decide answers a code for its owner; the user let in is told so.
func (d desk) decide(ctx context.Context, conv core.Conversation, code string, approve bool) (core.CommandReply, error) {
	h := d.h
	verb := "/deny"
	if approve {
		verb = "/approve"
	}
	if access.NormalizeCode(code) == "" {
		return reply("Send %s with the code they got, e.g. `%s K7XM2QPA`. /pairing lists the codes waiting.", verb, verb)
	}
	p, err := h.cfg.Pairings.DecidePairing(ctx, code, approve, string(conv.Platform)+":"+conv.ChannelUserID, h.cfg.Clock.Now().UTC())
	if errors.Is(err, core.ErrNotFound) {
		return reply("No code %s is waiting: codes last an hour, and each is answered once. /pairing lists the codes waiting.",
			escape(access.NormalizeCode(code), 20))
	}
	if err != nil {
		return core.CommandReply{}, err
	}
	if !approve {
		return reply("Denied: %s is not let in.", who(p))
	}
	h.cfg.Approved(ctx, p)
	return reply("Approved: %s can talk to me now.", who(p))
}

// waiting lists the codes waiting for an owner's answer.
func (d desk) waiting(ctx context.Context, _ core.Conversation, _ string) (core.CommandReply, error) {
	h := d.h
	ps, err := h.cfg.Pairings.Pairings(ctx, h.cfg.Clock.Now().UTC(), false)
	if err != nil {
		return core.CommandReply{}, err
	}
	if len(ps) == 0 {
		return reply("No pairing codes are waiting.")
	}
	var b strings.Builder
	b.WriteString("Waiting for your answer (/approve CODE or /deny CODE):\n\n")
	for i, p := range ps {
		if i == 20 {
			fmt.Fprintf(&b, "- and %d more (`parley pairing list` shows them all)\n", len(ps)-i)
			break
		}
		fmt.Fprintf(&b, "- `%s`: %s, asked %s\n", p.Code, who(p), when(p.CreatedAt, h.cfg.Location))
	}
	return reply("%s", b.String())
}

// who names the user of a pairing for an owner.
func who(p access.Request) string {
	s := string(p.Platform) + " user " + escape(p.UserID, 40)
	if p.DisplayName != "" {
		s = escape(p.DisplayName, 40) + " (" + s + ")"
	}
	return s
}
