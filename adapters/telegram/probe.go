package telegram

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

var _ core.Prober = (*Adapter)(nil)

// Probe checks the token with getMe, as Start does, and in webhook mode
// asks getWebhookInfo whether Telegram has somewhere to post updates. It
// needs no Start and changes nothing: no webhook is set or removed, no
// command registered, no update consumed.
func (st *state) Probe(ctx context.Context) (string, error) {
	transport := newTransport(st.cfg.PollTimeout)
	defer transport.CloseIdleConnections()
	b, err := bot.New(st.cfg.Token.Reveal(),
		bot.WithServerURL(st.apiURL()),
		bot.WithHTTPClient(st.cfg.PollTimeout, newClient(transport, st.cfg.PollTimeout)),
		bot.WithSkipGetMe(),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
	)
	if err != nil {
		return "", fmt.Errorf("creating the bot client: %w", st.scrub(err))
	}
	me, err := b.GetMe(ctx)
	if err != nil {
		return "", st.probeError("getMe", err)
	}
	if me == nil || me.ID == 0 {
		return "", errors.New("getMe answered without a bot: is adapters.telegram.api_url a Bot API server?")
	}
	detail := fmt.Sprintf("@%s (id %d)", me.Username, me.ID)
	if st.cfg.Mode != ModeWebhook {
		return detail + ", polling", nil
	}
	info, err := b.GetWebhookInfo(ctx)
	if err != nil {
		return "", st.probeError("getWebhookInfo", err)
	}
	switch {
	case st.cfg.WebhookURL != "" && info.URL != st.cfg.WebhookURL:
		// The URL may carry a secret path: it is not shown.
		detail += ", webhook: parley run registers webhook_url (Telegram has another URL or none now)"
	case info.URL == "":
		return "", errors.New("no webhook is registered with Telegram and adapters.telegram.webhook_url is empty, " +
			"so no update would arrive: set adapters.telegram.webhook_url (or register the webhook yourself)")
	case info.LastErrorMessage != "":
		detail += fmt.Sprintf(", webhook registered, but Telegram's last delivery failed (%s): check that it reaches %s",
			st.scrub(errors.New(info.LastErrorMessage)), cmp.Or(st.webhookPath, WebhookPath))
	default:
		detail += ", webhook registered"
	}
	return detail, nil
}

// probeError explains a failed Bot API call of Probe with the key to fix.
func (st *state) probeError(method string, err error) error {
	switch {
	case errors.Is(err, bot.ErrorUnauthorized):
		return errors.New("the token was refused (401 Unauthorized): fix adapters.telegram.token")
	case errors.Is(err, bot.ErrorNotFound):
		return fmt.Errorf("%s answered 404 Not Found: the token is malformed or api_url is not a Bot API server: "+
			"fix adapters.telegram.token (or adapters.telegram.api_url)", method)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: no answer from %s in time: check the network (or adapters.telegram.api_url)", method, st.apiURL())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// Its URL holds the token: only the cause is shown.
		return fmt.Errorf("cannot reach %s (%s): check the network (or adapters.telegram.api_url)", st.apiURL(), st.scrub(ue.Err))
	}
	return fmt.Errorf("%s failed: %s", method, st.scrub(err))
}
