package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/core"
)

var _ core.Prober = (*Adapter)(nil)

// Probe checks the token with GET /users/@me, as Start does, and asks GET
// /gateway/bot where the gateway is and whether Discord lets the bot open
// another session today. It opens no gateway connection and needs no
// Start.
func (st *state) Probe(ctx context.Context) (string, error) {
	var origin *url.URL
	if st.cfg.APIURL != "" {
		var err error
		if origin, err = parseOrigin(st.cfg.APIURL); err != nil {
			return "", fmt.Errorf("api_url %w: fix adapters.discord.api_url", err)
		}
	}
	transport := newTransport()
	defer transport.CloseIdleConnections()
	s, _ := discordgo.New("Bot " + st.cfg.Token.Reveal()) // New never fails for a bot token
	s.Client = newClient(transport, origin, ctx)
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.StateEnabled = false
	s.LogLevel = -1 // discordgo's own logging would show the request
	me, err := s.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		return "", st.probeError("GET /users/@me", origin, err)
	}
	if me == nil || me.ID == "" {
		return "", errors.New("GET /users/@me answered without a user: is adapters.discord.api_url Discord?")
	}
	gw, err := s.GatewayBot(discordgo.WithContext(ctx))
	if err != nil {
		return "", st.probeError("GET /gateway/bot", origin, err)
	}
	if gw.URL == "" {
		return "", errors.New("GET /gateway/bot answered without a gateway URL: is adapters.discord.api_url Discord?")
	}
	limit := gw.SessionStartLimit
	if limit.Total > 0 && limit.Remaining <= 0 {
		reset := (time.Duration(limit.ResetAfter) * time.Millisecond).Round(time.Second)
		return "", fmt.Errorf("the bot may open no more gateway sessions until Discord's daily limit (%d) resets in %s: "+
			"something keeps connecting with adapters.discord.token; stop it and wait", limit.Total, reset)
	}
	// discordgo ends the URL with the "/" it joins a query to.
	detail := fmt.Sprintf("@%s (id %s), gateway %s", me.Username, me.ID, strings.TrimSuffix(gw.URL, "/"))
	if limit.Total > 0 {
		detail += fmt.Sprintf(", %d of %d session starts left today", limit.Remaining, limit.Total)
	}
	if shards := max(st.cfg.ShardCount, 1); gw.Shards > shards {
		detail += fmt.Sprintf(", Discord recommends %d shards (adapters.discord.shard_count is %d)", gw.Shards, shards)
	}
	return detail, nil
}

// probeError explains a failed REST call of Probe with the key to fix.
func (st *state) probeError(call string, origin *url.URL, err error) error {
	where := "https://discord.com"
	if origin != nil {
		where = origin.String()
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		switch code := re.Response.StatusCode; code {
		case http.StatusUnauthorized:
			return errors.New("the token was refused (401 Unauthorized): fix adapters.discord.token")
		default:
			msg := fmt.Sprintf("%d %s", code, http.StatusText(code))
			if re.Message != nil && re.Message.Message != "" {
				msg += ": " + re.Message.Message
			}
			return fmt.Errorf("%s answered %s", call, st.scrub(errors.New(msg)))
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: no answer from %s in time: check the network (or adapters.discord.api_url)", call, where)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach %s (%s): check the network (or adapters.discord.api_url)", where, st.scrub(err))
}
