package telegramtest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakewait"
)

// Fault is an error answer of the Bot API: error_code, description and, for
// 429, parameters.retry_after.
type Fault struct {
	Code        int
	Description string
	RetryAfter  int
}

// TooManyRequests is Telegram's flood-control answer; go-telegram/bot turns
// it into *bot.TooManyRequestsError with RetryAfter set.
func TooManyRequests(retryAfterSeconds int) Fault {
	return Fault{
		Code:        http.StatusTooManyRequests,
		Description: fmt.Sprintf("Too Many Requests: retry after %d", retryAfterSeconds),
		RetryAfter:  retryAfterSeconds,
	}
}

// MessageTooLong is the answer to a text over 4096 characters.
func MessageTooLong() Fault { return badRequest("message is too long") }

// BotBlocked is the answer to a message to a user who blocked the bot.
func BotBlocked() Fault {
	return Fault{Code: http.StatusForbidden, Description: "Forbidden: bot was blocked by the user"}
}

// ServerError is a 500 from Telegram's side.
func ServerError() Fault {
	return Fault{Code: http.StatusInternalServerError, Description: "Internal Server Error"}
}

func badRequest(what string) Fault {
	return Fault{Code: http.StatusBadRequest, Description: "Bad Request: " + what}
}

func notFound() Fault {
	return Fault{Code: http.StatusNotFound, Description: "Not Found"}
}

// scheduledFault fails a call once skip more calls have succeeded.
type scheduledFault struct {
	skip  int
	fault Fault
}

// faultInjector makes the fake fail as Telegram does: scheduled error
// answers, blocked users, a revoked token, refused markup.
type faultInjector struct{ *state }

// FailNext makes the next call of method (e.g. "sendMessage") fail with f.
// Faults of one method form a queue in the order they were scheduled, so
// several FailNext calls fail several calls in turn.
func (s *faultInjector) FailNext(method string, f Fault) {
	s.FailAfter(method, 0, f)
}

// FailAfter lets n calls of method succeed, then fails one with f. It joins
// the method's fault queue: its n counts from the moment the faults
// scheduled before it have fired.
func (s *faultInjector) FailAfter(method string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(method)
	s.faults[key] = append(s.faults[key], &scheduledFault{skip: n, fault: f})
}

// takeFault consumes one call from the method's fault queue and returns the
// fault to answer with, if any.
func (s *state) takeFault(method string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[method]
	if len(q) == 0 {
		return nil
	}
	if q[0].skip > 0 {
		q[0].skip--
		return nil
	}
	f := q[0].fault
	s.faults[method] = q[1:]
	return &f
}

// Block makes the user block the bot: from now on sendMessage and
// sendChatAction to the chat with that user answer 403 "Forbidden: bot was
// blocked by the user".
func (s *faultInjector) Block(userID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[userID] = true
}

// Unblock undoes Block.
func (s *faultInjector) Unblock(userID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.blocked, userID)
}

// RevokeToken makes the server refuse the bot's token, as Telegram does
// once the token is revoked in BotFather: every call and download answers
// 401 "Unauthorized" until RestoreToken.
func (s *faultInjector) RevokeToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
}

// RestoreToken makes the server accept the bot's token again.
func (s *faultInjector) RestoreToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = false
}

// RefuseNextMarkup makes the next sendMessage or sendPhoto that has a
// parse_mode answer as Telegram does markup it cannot parse: 400 "Bad
// Request: can't parse entities: Can't find end of Bold entity at byte
// offset N" (N where the first entity opens in the text, else 0). A call
// without a parse mode (the plain text a bot sends instead) is not
// refused and does not count. Refusals form a queue, as FailNext's do.
func (s *faultInjector) RefuseNextMarkup() { s.RefuseMarkupAfter(0) }

// RefuseMarkupAfter lets n calls with a parse_mode through, then refuses
// one as RefuseNextMarkup does (for a split reply whose later part is
// refused).
func (s *faultInjector) RefuseMarkupAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markupFaults = append(s.markupFaults, n)
}

// takeMarkupFault consumes one formatted call from the refusal queue and
// returns the fault to answer text with, if any.
func (s *state) takeMarkupFault(text string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.markupFaults) == 0 {
		return nil
	}
	if s.markupFaults[0] > 0 {
		s.markupFaults[0]--
		return nil
	}
	s.markupFaults = s.markupFaults[1:]
	kind, offset := "Bold", 0
	for i := 0; i < len(text); i++ {
		if text[i] == '\\' {
			i++
			continue
		}
		if k, ok := entityOpeners[text[i]]; ok {
			kind, offset = k, i
			break
		}
	}
	f := badRequest(fmt.Sprintf("can't parse entities: Can't find end of %s entity at byte offset %d", kind, offset))
	return &f
}

// entityOpeners are the MarkdownV2 characters that open an entity, with
// the name Telegram gives it in errors.
var entityOpeners = map[byte]string{
	'*': "Bold", '_': "Italic", '~': "Strikethrough", '`': "Code", '[': "TextUrl", '|': "Spoiler",
}

// HoldAnswers makes calls of method (e.g. "sendVoice"), from now on, act
// (the message is sent) and then hold their answer until ReleaseAnswers
// or until the client goes away, which then never hears of it: a bot
// killed in that window does not know its message went out.
func (s *faultInjector) HoldAnswers(method string) { s.holds.Hold(strings.ToLower(method)) }

// ReleaseAnswers answers the held calls of method and holds no more.
func (s *faultInjector) ReleaseAnswers(method string) { s.holds.Release(strings.ToLower(method)) }

// WaitHeld waits until n calls of method have had their answer held.
func (s *faultInjector) WaitHeld(t testing.TB, method string, n int, timeout time.Duration) {
	t.Helper()
	key := strings.ToLower(method)
	fakewait.Until(t, "telegramtest", &s.mu, func() <-chan struct{} { return s.changed }, s.done, timeout,
		func() bool { return s.holds.Held(key) >= n },
		func() string { return fmt.Sprintf("%d held answers of %s, got %d", n, method, s.holds.Held(key)) })
}
