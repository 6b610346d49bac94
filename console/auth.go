package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/httpapi"
)

// Cookie and form names.
const (
	// CookieName is the console's session cookie.
	CookieName = "parley_console"
	// CSRFField is the hidden form field every state-changing POST carries.
	CSRFField = "csrf"
	// TokenField is the login form's field for http.api_token.
	TokenField = "token"
)

// SessionTTL is how long a console login lasts.
const SessionTTL = 7 * 24 * time.Hour

// clockSkew is how far in the future a session may say it was issued: a
// cookie made by another process whose clock runs a little ahead.
const clockSkew = time.Minute

// HMAC labels: one key (the token) signs different things, and a label
// keeps a signature of one kind from passing for another.
const (
	sessionLabel = "parley console session v1\x00"
	csrfLabel    = "parley console csrf v1\x00"
)

// auth issues and checks console sessions. It keeps no state: a session is
// a cookie "issued.nonce.mac" whose mac is an HMAC keyed by the token, so
// the cookie never contains the token, any process with the same token
// accepts it, and changing the token logs every session out. Logging
// out one session is recorded in the store (Console.session), which
// every replica reads.
type auth struct {
	key []byte
	// tokenSum is the token's SHA-256: comparing fixed-size sums keeps the
	// login check constant-time in the token's length too.
	tokenSum [sha256.Size]byte
	clock    core.Clock
	// backoff slows down guessing the token at the login form, per
	// address.
	backoff *httpapi.Backoff
}

func newAuth(token string, clock core.Clock, backoff *httpapi.Backoff) *auth {
	return &auth{key: []byte(token), tokenSum: sha256.Sum256([]byte(token)), clock: clock, backoff: backoff}
}

// attempt says whether r's address may try a token now, or how long it
// must still wait. While it waits, no token of its is checked, the right
// one included: a different answer for it would tell the guesser.
func (a *auth) attempt(r *http.Request, log *slog.Logger) (time.Duration, bool) {
	ip := httpapi.ClientIP(r)
	v := a.backoff.Check(ip)
	logLogin(log, ip, v)
	return v.Wait, v.Wait <= 0
}

// failed records a wrong token from r's address.
func (a *auth) failed(r *http.Request, log *slog.Logger) {
	ip := httpapi.ClientIP(r)
	logLogin(log, ip, a.backoff.Fail(ip))
}

// logLogin logs refused logins, one line per address per minute with
// the count (a guesser would otherwise write the log full); never the
// token.
func logLogin(log *slog.Logger, ip netip.Addr, v httpapi.Verdict) {
	if v.Log {
		log.Warn("console login refused: wrong token", "ip", ip.String(), "wrong_tokens", v.Failures,
			"refused_while_waiting", v.Refused, "wait", v.Wait.Round(time.Second).String())
	}
}

// session is a checked login.
type session struct {
	// nonce is the session's id, random and in its cookie.
	nonce string
	// issued is when the session began: it ends SessionTTL later.
	issued time.Time
	// csrf is the value forms of this session carry in CSRFField.
	csrf string
}

// tokenMatches reports, in constant time, whether given is the token.
func (a *auth) tokenMatches(given string) bool {
	sum := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

func (a *auth) mac(label, msg string) string {
	h := hmac.New(sha256.New, a.key)
	h.Write([]byte(label))
	h.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// issue starts a session and returns its cookie value.
func (a *auth) issue() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a session nonce: %w", err)
	}
	payload := strconv.FormatInt(a.clock.Now().Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(b[:])
	return payload + "." + a.mac(sessionLabel, payload), nil
}

// check returns the session a cookie value stands for, if it is genuine
// and not expired.
func (a *auth) check(value string) (session, bool) {
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return session{}, false
	}
	payload, sig := value[:i], value[i+1:]
	if !hmac.Equal([]byte(sig), []byte(a.mac(sessionLabel, payload))) {
		return session{}, false
	}
	issuedRaw, nonce, ok := strings.Cut(payload, ".")
	if !ok || nonce == "" {
		return session{}, false
	}
	unix, err := strconv.ParseInt(issuedRaw, 10, 64)
	if err != nil {
		return session{}, false
	}
	issued, now := time.Unix(unix, 0), a.clock.Now()
	if issued.After(now.Add(clockSkew)) || now.Sub(issued) >= SessionTTL {
		return session{}, false
	}
	return session{nonce: nonce, issued: issued, csrf: a.mac(csrfLabel, nonce)}, true
}

// fromRequest is the session of r's cookie, if any.
func (a *auth) fromRequest(r *http.Request) (session, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return session{}, false
	}
	return a.check(c.Value)
}

// csrfOK reports, in constant time, whether r's form carries s's CSRF
// token. SameSite=Strict already keeps the cookie off cross-site requests;
// this covers browsers that do not honour it.
func (s session) csrfOK(r *http.Request) bool {
	return hmac.Equal([]byte(r.PostFormValue(CSRFField)), []byte(s.csrf))
}

// sessionCookie is the cookie carrying value; an empty value with maxAge
// -1 deletes it.
func sessionCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     CookieName,
		Value:    value,
		Path:     Prefix,
		MaxAge:   maxAge,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		// Secure only behind TLS: on a plain-HTTP listener a Secure cookie
		// would never come back and nobody could log in. A proxy says so
		// only from http.trusted_proxies.
		Secure: httpapi.HTTPS(r),
	}
}
