package commands

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parleybot/parley/core"
)

// The buttons of the commands' answers, where the platform has buttons:
// /reminders shows a cancel button per reminder (the first maxCancelButtons),
// /forget all a confirmation. Each carries data of the commands' own
// (core.CommandDataPrefix), answered by TapCommand without the model.
const (
	cancelData       = core.CommandDataPrefix + "x" // + the job's id
	forgetYes        = core.CommandDataPrefix + "f.yes"
	forgetNo         = core.CommandDataPrefix + "f.no"
	maxCancelButtons = 8
	// cancelledByButton marks a job the user cancelled with a button.
	cancelledByButton = "command:cancel button"
)

// Interface guard.
var _ core.CommandTapper = (*Handler)(nil)

// cancelButtons are a listing's cancel buttons: one per job listed, in
// the order shown, the first maxCancelButtons of them.
func cancelButtons(ids []int64) []core.Choice {
	out := make([]core.Choice, 0, min(len(ids), maxCancelButtons))
	for i, id := range ids[:min(len(ids), maxCancelButtons)] {
		out = append(out, core.Choice{Label: fmt.Sprintf("Cancel %d", i+1), Data: cancelData + strconv.FormatInt(id, 10)})
	}
	return out
}

// TapCommand answers a tap on one of the commands' buttons in conv
// (core.CommandTapper). The core has checked that the button is on a
// command's answer in conv; a job the data names must be conv's too.
func (h *Handler) TapCommand(ctx context.Context, conv core.Conversation, data string) (core.CommandTap, error) {
	switch data {
	case forgetYes:
		r, err := h.forgetAll(ctx, conv)
		return core.CommandTap{Reply: r, Notice: "Erased."}, err
	case forgetNo, eraseNo:
		return core.CommandTap{Reply: core.CommandReply{Text: "Kept: I haven't erased anything."}, Notice: "Kept."}, nil
	case eraseYes:
		if h.cfg.Erase == nil {
			break
		}
		r, err := userData{h}.eraseAll(ctx, conv)
		return core.CommandTap{Reply: r, Notice: "Erased."}, err
	}
	if rest, ok := strings.CutPrefix(data, cancelData); ok {
		id, err := strconv.ParseInt(rest, 10, 64)
		if err == nil && id > 0 && cancelData+strconv.FormatInt(id, 10) == data {
			return h.cancelByButton(ctx, conv, id)
		}
	}
	return core.CommandTap{Notice: core.NoticeStaleButton}, nil
}

// cancelByButton cancels job id of conv, as /cancel does for a number.
func (h *Handler) cancelByButton(ctx context.Context, conv core.Conversation, id int64) (core.CommandTap, error) {
	j, err := h.cfg.Store.CancelJob(ctx, conv.ID, id, cancelledByButton)
	switch {
	case errors.Is(err, core.ErrNotPending):
		return core.CommandTap{Notice: "Can't cancel: " + notPending(j.Status) + "."}, nil
	case core.IsNotFound(err):
		return core.CommandTap{Notice: core.NoticeStaleButton}, nil
	case err != nil:
		return core.CommandTap{}, err
	}
	h.cfg.JobsChanged()
	if j.Kind == core.JobAgentTurn {
		r, _ := reply("Cancelled the recurring “%s”. It won't run again.", escape(j.Name, 80))
		return core.CommandTap{Reply: r, Notice: "Cancelled."}, nil
	}
	r, _ := reply("Cancelled “%s”, which was due %s.", inline(j.Text, textPreview), when(j.DueAt, h.location(conv)))
	return core.CommandTap{Reply: r, Notice: "Cancelled."}, nil
}
