package web

import (
	"net/http"
	"strings"

	"github.com/parleybot/parley/core"
)

// postedTap is POST /web/taps: a tap on a button of message MessageID.
type postedTap struct {
	ClientID  string `json:"client_id"`
	Name      string `json:"name"`
	MessageID string `json:"message_id"`
	Data      string `json:"data"`
}

// tapBody is the answer to a tap: the choice it made ("" for none) and
// a notice to show under the buttons.
type tapBody struct {
	Chosen string `json:"chosen"`
	Notice string `json:"notice,omitempty"`
}

// handleTap is POST /web/taps: the page's tap on a question's button,
// guarded as a message is (same site, JSON, the per-address and
// per-client rates), handed to the core, which checks it against its
// record. The answer says whether it made the choice.
func (rt *routes) handleTap(w http.ResponseWriter, r *http.Request) {
	var in postedTap
	p, ok := rt.admitPost(w, r, &in)
	if !ok {
		return
	}
	if strings.TrimSpace(in.Data) == "" || len(in.Data) > 64 {
		writeError(w, http.StatusBadRequest, "data must be a button's data")
		return
	}
	if !rt.admitClient(w, r, p, in.ClientID) {
		return
	}
	h := p.h
	id := rt.nextID()
	ans, err := h.HandleTap(r.Context(), core.InboundMessage{
		Platform:        Platform,
		ChannelThreadID: in.ClientID,
		ChannelUserID:   in.ClientID,
		DisplayName:     displayName(in.Name),
		SentAt:          rt.clock.Now(),
		Direct:          true,
		Tap:             &core.Tap{Data: in.Data, MessageID: in.MessageID, ID: id},
	})
	if err != nil {
		rt.log.Error("handing a web tap to the core", "client", in.ClientID, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, tapBody{Notice: "Could not take that now: try again in a moment."})
		return
	}
	writeJSON(w, http.StatusOK, tapBody{Chosen: ans.Chosen, Notice: ans.Notice})
}
