package slack

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/httpclient"
)

var _ core.Prober = (*Adapter)(nil)

// Probe checks the bot token with auth.test, as Start does, and in socket
// mode the app token with apps.connections.open, which hands out a
// websocket URL that Probe leaves unused (it expires by itself). It needs
// no Start and opens no connection.
func (st *state) Probe(ctx context.Context) (string, error) {
	transport := httpclient.Transport(requestTimeout)
	defer transport.CloseIdleConnections()
	api, err := st.newAPI(transport)
	if err != nil {
		return "", fmt.Errorf("%w: fix adapters.slack.api_url", err)
	}
	res, err := api.AuthTestContext(ctx)
	if err != nil {
		if isAuthError(err) {
			return "", fmt.Errorf("the bot token was refused (%s): fix adapters.slack.bot_token", errorCode(err))
		}
		return "", st.probeError("auth.test", err)
	}
	if res.UserID == "" {
		return "", errors.New("auth.test answered without a user: is adapters.slack.api_url Slack's Web API?")
	}
	detail := fmt.Sprintf("@%s (user %s) in %s", res.User, res.UserID, res.Team)
	if st.cfg.Mode != ModeSocket {
		return detail + ", events mode", nil
	}
	if _, _, err := api.StartSocketModeContext(ctx); err != nil {
		if isAuthError(err) {
			return "", fmt.Errorf("the app token was refused by apps.connections.open (%s): fix adapters.slack.app_token "+
				"(an xapp- token with connections:write, and Socket Mode on in the app's settings)", errorCode(err))
		}
		return "", st.probeError("apps.connections.open", err)
	}
	return detail + ", socket mode (apps.connections.open ok)", nil
}

// probeError explains a failed Web API call of Probe that is not a
// refused token.
func (st *state) probeError(method string, err error) error {
	if code := errorCode(err); code != "" {
		return fmt.Errorf("%s answered %s", method, code)
	}
	base := "https://slack.com/api/"
	if st.cfg.APIURL != "" {
		base = st.cfg.APIURL
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: no answer from %s in time: check the network (or adapters.slack.api_url)", method, base)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach %s (%s): check the network (or adapters.slack.api_url)", base, st.scrub(err))
}
