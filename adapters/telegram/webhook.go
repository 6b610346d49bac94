package telegram

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/go-telegram/bot/models"
)

// WebhookPath is where Telegram posts updates in webhook mode.
const WebhookPath = "/webhooks/telegram"

// maxWebhookBody bounds one webhook request; an update is a few KiB.
const maxWebhookBody = 1 << 20

// Mount serves POST /webhooks/telegram (for a bot other than the default,
// /webhooks/BOT/telegram) in webhook mode; in polling mode it registers
// nothing.
func (in *inbound) Mount(mux *http.ServeMux) {
	if in.cfg.Mode != ModeWebhook {
		return
	}
	mux.HandleFunc("POST "+cmp.Or(in.webhookPath, WebhookPath), in.serveWebhook)
}

// serveWebhook checks the secret header and hands the update to the core
// before answering, so that a 200 means the core has it. go-telegram/bot's
// own WebhookHandler answers 200 to a wrong secret and queues updates it
// may lose at shutdown, hence this handler.
func (in *inbound) serveWebhook(w http.ResponseWriter, r *http.Request) {
	got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
	want := in.cfg.WebhookSecret.Reveal()
	if got == "" || want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		in.log.Warn("rejecting a telegram webhook request with a missing or wrong secret", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "update too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the update failed", http.StatusBadRequest)
		return
	}
	if !json.Valid(body) {
		http.Error(w, "the body is not JSON", http.StatusBadRequest)
		return
	}

	in.mu.Lock()
	running := in.started && !in.stopped && in.runCtx != nil
	if running {
		in.wg.Add(1)
	}
	ctx := in.runCtx
	in.mu.Unlock()
	if !running {
		// Telegram keeps the update and tries again later.
		http.Error(w, "telegram adapter is not running", http.StatusServiceUnavailable)
		return
	}
	defer in.wg.Done()

	var upd models.Update
	if err := json.Unmarshal(body, &upd); err != nil {
		// Authentic but unreadable: answering an error would only make
		// Telegram send it again and again.
		in.log.Warn("skipping a telegram webhook update that cannot be decoded", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := in.handleUpdate(ctx, &upd); err != nil {
		// Telegram retries, so the message is not lost.
		http.Error(w, "the update could not be handled", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}
