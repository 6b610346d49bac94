package web

import (
	"net/http"
	"strings"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/httpapi"
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
	h := rt.inboundHandler()
	if h == nil {
		writeError(w, http.StatusServiceUnavailable, "web chat is not running")
		return
	}
	g := rt.guards()
	if !rt.sameSite(w, r, g) {
		return
	}
	if !isJSON(r) {
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	addr := httpapi.ClientIP(r)
	if ok, wait := g.msgIP.take(ipKey(addr), rt.clock.Now()); !ok {
		rt.refused(w, r, g, "messages_per_minute_per_ip", addr, wait,
			"Too many messages from your network: wait "+waitText(wait)+" and try again.")
		return
	}
	var in postedTap
	if status, msg := decodeMessage(http.MaxBytesReader(w, r.Body, maxBodyBytes), &in); status != 0 {
		writeError(w, status, msg)
		return
	}
	if !clientIDPattern.MatchString(in.ClientID) {
		writeError(w, http.StatusBadRequest, "client_id must be 8 to 64 letters, digits, '-' or '_'")
		return
	}
	if strings.TrimSpace(in.Data) == "" || len(in.Data) > 64 {
		writeError(w, http.StatusBadRequest, "data must be a button's data")
		return
	}
	if ok, wait := g.msgClient.take(in.ClientID, rt.clock.Now()); !ok {
		rt.refused(w, r, g, "messages_per_minute_per_client", addr, wait,
			"You are sending messages too fast: wait "+waitText(wait)+" and try again.")
		return
	}
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
