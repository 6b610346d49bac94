package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/parleybot/parley/core"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// EventsPath is where Slack posts events in events mode.
const EventsPath = "/webhooks/slack/events"

// maxEventBody bounds one Events API request; an event is a few KiB.
const maxEventBody = 1 << 20

// Mount serves POST /webhooks/slack/events and, for slash commands, POST
// /webhooks/slack/commands and, for button taps, POST
// /webhooks/slack/interactivity in events mode (for a bot other than the
// default, under /webhooks/BOT/slack/); in socket mode it registers
// nothing.
func (in *inbound) Mount(mux *http.ServeMux) {
	if in.cfg.Mode != ModeEvents {
		return
	}
	mux.HandleFunc("POST "+core.WebhookPath(in.parleyBot, EventsPath), in.serveEvents)
	mux.HandleFunc("POST "+core.WebhookPath(in.parleyBot, CommandsPath), in.serveCommand)
	mux.HandleFunc("POST "+core.WebhookPath(in.parleyBot, InteractivityPath), in.serveInteractivity)
}

// serveEvents checks the request's signature and timestamp, then answers
// url_verification or hands the event to the core. The answer comes within
// the ack budget (Slack wants one within 3 seconds): 200 once the core has
// the message, which it answers asynchronously, or 503 when the core could
// not take it in time, so that Slack retries it later. A retry of an event
// already handled gets 200 and is not handled again.
func (in *inbound) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "event too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the event failed", http.StatusBadRequest)
		return
	}
	if err := in.verify(r.Header, body); err != nil {
		in.log.Warn("rejecting a slack events request with a bad signature", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var head struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		// Authentic but unreadable: an error would only bring it back.
		in.log.Warn("skipping a slack events request that is not JSON", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch head.Type {
	case slackevents.URLVerification:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, head.Challenge)
		return
	case slackevents.AppRateLimited:
		in.log.Warn("slack dropped events for this app: it exceeded the events rate limit")
		w.WriteHeader(http.StatusOK)
		return
	case string(slackevents.CallbackEvent):
	default:
		w.WriteHeader(http.StatusOK)
		return
	}

	in.mu.Lock()
	running := in.started && !in.stopped && in.api != nil
	in.mu.Unlock()
	if !running {
		// Slack keeps the event and tries again later.
		http.Error(w, "slack adapter is not running", http.StatusServiceUnavailable)
		return
	}
	retry, _ := strconv.Atoi(r.Header.Get("X-Slack-Retry-Num"))
	// The request's context ends when Slack stops waiting; the handling
	// is bounded by the ack budget and Stop instead.
	if !in.handleCallback(context.WithoutCancel(r.Context()), body, retry) {
		http.Error(w, "the event could not be handled yet", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// verify checks X-Slack-Signature against the signing secret; slack-go
// also rejects a timestamp more than 5 minutes away, so a captured
// request cannot be replayed later.
func (in *inbound) verify(h http.Header, body []byte) error {
	sv, err := slack.NewSecretsVerifier(h, in.cfg.SigningSecret.Reveal())
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	return sv.Ensure()
}
