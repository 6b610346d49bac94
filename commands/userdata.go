package commands

import (
	"context"
	"strings"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/userdata"
)

// userData is the commands about the user's own data: /export, /erase.
type userData struct{ h *Handler }

// export sends the user everything the bot keeps about them, as files:
// JSON for programs, Markdown to read.
func (u userData) export(ctx context.Context, conv core.Conversation, _ string) (core.CommandReply, error) {
	files, err := u.h.cfg.Export(ctx, conv)
	if err != nil {
		return core.CommandReply{}, err
	}
	return core.CommandReply{
		Text: "Here is everything I keep about you: our messages with their times, what I remember, " +
			"the summaries of our earlier conversations, your reminders, my mood and the limits you hit. " +
			"The .json file is for programs, the .md file is to read. /erase deletes it all.",
		Files: files,
	}, nil
}

// The buttons of /erase's confirmation.
const (
	eraseYes = core.CommandDataPrefix + "e.yes"
	eraseNo  = core.CommandDataPrefix + "e.no"
)

// erase asks first: "/erase" explains and offers the buttons (where the
// platform has them) or "/erase confirm", which deletes everything.
func (u userData) erase(ctx context.Context, conv core.Conversation, args string) (core.CommandReply, error) {
	switch strings.Join(strings.Fields(strings.ToLower(args)), " ") {
	case "":
		r, _ := reply("This deletes everything I keep about you: our messages, what I remember, the summaries of our " +
			"conversations, your reminders and my mood with you. It can't be undone (/export first gets you a copy). " +
			"To go ahead, send `/erase confirm`.")
		r.Choices, r.OneAnswer = []core.Choice{{Label: "Erase everything", Data: eraseYes}, {Label: "Keep it", Data: eraseNo}}, true
		return r, nil
	case "confirm":
		return u.eraseAll(ctx, conv)
	}
	return reply("Send /erase to delete everything I keep about you.")
}

// eraseAll deletes everything kept about the user of conv. The answer
// is marked: its conversation is gone, so it is sent and never stored.
func (u userData) eraseAll(ctx context.Context, conv core.Conversation) (core.CommandReply, error) {
	if _, err := u.h.cfg.Erase(ctx, conv); err != nil {
		return core.CommandReply{}, err
	}
	return core.CommandReply{
		Text:     "Done: everything I kept about you is deleted. If you write to me again, we start from nothing.",
		Metadata: map[string]any{userdata.ErasedKey: true},
	}, nil
}
