package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/parleybot/parley/core"
)

// Bot is one bot the API routes for (APIConfig.Bots): its id, its view of
// the store and its adapters.
type Bot struct {
	ID       string
	Store    Store
	Adapters []core.Adapter
}

// forBot is the API's view for bot name: its store and adapters. With
// several bots name is required (a 400 names them); with one it may be
// left out.
func forBot(a *API, name string) (*API, error) {
	if a.cfg.Bots == nil {
		return a, nil
	}
	bots := a.cfg.Bots()
	ids := make([]string, len(bots))
	for i, b := range bots {
		ids[i] = b.ID
		if b.ID == name || (name == "" && len(bots) == 1) {
			v := *a
			v.store = b.Store
			v.adapters, v.platforms = byPlatform(b.Adapters)
			return &v, nil
		}
	}
	if name == "" {
		return nil, badRequest("bot is required: this parley runs %s", orList(ids))
	}
	return nil, badRequest("bot %q: this parley runs %s", name, orList(ids))
}

// routeScope is the API's view for a routed message's bot: the one it
// names, or the one its conversation_id belongs to.
func routeScope(a *API, r *http.Request, req routeRequest) (*API, error) {
	name := strings.TrimSpace(req.Bot)
	if a.cfg.Bots != nil && name == "" && req.ConversationID != nil {
		conv, err := a.store.Conversation(r.Context(), *req.ConversationID)
		switch {
		case errors.Is(err, core.ErrNotFound):
			return nil, &apiError{http.StatusNotFound, fmt.Sprintf("conversation %d not found", *req.ConversationID)}
		case err != nil:
			return nil, err
		}
		name = conv.BotID
	}
	b, err := forBot(a, name)
	if err != nil {
		return nil, err
	}
	if req.ConversationID != nil && name != "" && a.cfg.Bots != nil {
		conv, err := a.store.Conversation(r.Context(), *req.ConversationID)
		if err == nil && conv.BotID != name {
			return nil, badRequest("conversation %d is bot %s's, not %s's", conv.ID, conv.BotID, name)
		}
	}
	return b, nil
}

// listScope is the API's view for a list: the bot ?bot= names, else every
// bot's rows.
func listScope(a *API, r *http.Request) (*API, error) {
	name := strings.TrimSpace(r.URL.Query().Get("bot"))
	if name == "" {
		return a, nil
	}
	return forBot(a, name)
}
