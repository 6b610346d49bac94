package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/parleybot/parley/core"
)

// factPreview bounds a fact in the /forget listing.
const factPreview = 300

// forget lists the facts remembered about the user; "/forget all" asks
// for the confirming "/forget all confirm", which erases them. Asking
// first costs one message and saves a user who typed "/forget all" to
// see what it does.
func (h *Handler) forget(ctx context.Context, conv core.Conversation, args string) (core.CommandReply, error) {
	switch strings.Join(strings.Fields(strings.ToLower(args)), " ") {
	case "":
		return h.listFacts(ctx, conv)
	case "all":
		facts, err := h.cfg.Facts.Facts(ctx, conv.ID)
		if err != nil {
			return core.CommandReply{}, err
		}
		if len(facts) == 0 {
			return reply("I don't remember anything about you, so there is nothing to erase.")
		}
		r, _ := reply("This erases the %s I remember about you, for good. To go ahead, send `/forget all confirm`.",
			things(len(facts)))
		r.Choices, r.OneAnswer = []core.Choice{{Label: "Erase all", Data: forgetYes}, {Label: "Keep", Data: forgetNo}}, true
		return r, nil
	case "all confirm":
		return h.forgetAll(ctx, conv)
	}
	return reply("Send /forget to see what I remember about you, or `/forget all` to erase all of it.")
}

// forgetAll erases every fact remembered about the user of conv.
func (h *Handler) forgetAll(ctx context.Context, conv core.Conversation) (core.CommandReply, error) {
	n, err := h.cfg.Facts.ForgetAllFacts(ctx, conv.ID)
	if err != nil {
		return core.CommandReply{}, err
	}
	if n == 0 {
		return reply("I didn't remember anything about you, so there was nothing to erase.")
	}
	return reply("Done: I've forgotten the %s I remembered about you.", things(n))
}

func (h *Handler) listFacts(ctx context.Context, conv core.Conversation) (core.CommandReply, error) {
	facts, err := h.cfg.Facts.Facts(ctx, conv.ID)
	if err != nil {
		return core.CommandReply{}, err
	}
	if len(facts) == 0 {
		return reply("I don't remember anything about you yet.")
	}
	var b strings.Builder
	b.WriteString("Here's what I remember about you:\n\n")
	for i, f := range facts {
		fmt.Fprintf(&b, "%d. %s\n", i+1, escape(f.Content, factPreview))
	}
	b.WriteString("\nTo erase all of it, send `/forget all`.")
	return reply("%s", b.String())
}

// noFacts keeps no facts: the bot runs without the memory plugin.
type noFacts struct{}

func (noFacts) Facts(context.Context, int64) ([]core.Fact, error) { return nil, nil }

func (noFacts) ForgetAllFacts(context.Context, int64) (int, error) { return 0, nil }

// things is "1 thing" or "n things".
func things(n int) string {
	if n == 1 {
		return "1 thing"
	}
	return fmt.Sprintf("%d things", n)
}
