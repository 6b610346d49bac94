package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/httpapi"
)

// routes serves the chat's HTTP routes: the page, posted messages (behind
// the guards: limits, origins, known clients), event streams and history.
type routes struct{ *state }

// OpenStreams is how many event streams (GET /web/events) are open now.
func (rt *routes) OpenStreams() int { return rt.hub.openStreams() }

const (
	// maxBodyBytes caps a POSTed message.
	maxBodyBytes = 64 << 10
	// maxNameRunes caps a display name.
	maxNameRunes = 64
	// defaultHistory and maxHistory bound GET /web/history's limit.
	defaultHistory = 50
	maxHistory     = 500
	// defaultName is the display name of a browser that sent none.
	defaultName = "Web user"
	// notKeptRetry is the Retry-After of a message refused because
	// neither the store nor the inbound spool could keep it: about the
	// spool's longest wait between tries of the store.
	notKeptRetry = 5 * time.Second
)

// clientIDPattern is what a browser's client id must look like; it becomes a
// channel_thread_id, so it is kept short and URL-safe.
var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// Mount registers the chat page and the /web/ endpoints on mux.
func (rt *routes) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", rt.handlePage)
	mux.HandleFunc("POST /web/messages", rt.handleMessage)
	mux.HandleFunc("POST /web/taps", rt.handleTap)
	mux.HandleFunc("GET /web/events", rt.handleEvents)
	mux.HandleFunc("GET /web/history", rt.handleHistory)
	mux.HandleFunc("GET /web/status", rt.handleStatus)
	mux.HandleFunc("GET /web/files/{id}", rt.handleFile)
	up := uploadRoutes{rt}
	mux.HandleFunc("POST /web/uploads", up.handleUpload)
	mux.HandleFunc("GET /web/uploads/{id}", up.handleUploaded)
}

// postedMessage is the body of POST /web/messages.
type postedMessage struct {
	ClientID string `json:"client_id"`
	Name     string `json:"name"`
	Text     string `json:"text"`
	// Files are the ids POST /web/uploads gave the files sent with it.
	Files []string `json:"files"`
}

// post is a POST from the page that passed the guards every post passes:
// the web chat running, same site, JSON, the address's rate.
type post struct {
	h    core.Host
	g    *guards
	addr netip.Addr
}

// admitPost checks r as every post from the page is checked and decodes
// its body into in; false when it answered r with a refusal. The address
// is charged first, before the body is read, so that a flood costs
// little; every post past that counts, taken or not.
func (rt *routes) admitPost(w http.ResponseWriter, r *http.Request, in any) (post, bool) {
	p := post{h: rt.inboundHandler()}
	if p.h == nil {
		writeError(w, http.StatusServiceUnavailable, "web chat is not running")
		return p, false
	}
	p.g = rt.guards()
	if !rt.sameSite(w, r, p.g) {
		return p, false
	}
	if !isJSON(r) {
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return p, false
	}
	p.addr = httpapi.ClientIP(r)
	if ok, wait := p.g.msgIP.take(ipKey(p.addr), rt.clock.Now()); !ok {
		rt.refused(w, r, p.g, "messages_per_minute_per_ip", p.addr, wait,
			"Too many messages from your network: wait "+waitText(wait)+" and try again.")
		return p, false
	}
	if status, msg := decodeMessage(http.MaxBytesReader(w, r.Body, maxBodyBytes), in); status != 0 {
		writeError(w, status, msg)
		return p, false
	}
	return p, true
}

// admitClient checks a post's client id and charges the client's rate;
// false when it answered r with a refusal.
func (rt *routes) admitClient(w http.ResponseWriter, r *http.Request, p post, clientID string) bool {
	if !clientIDPattern.MatchString(clientID) {
		writeError(w, http.StatusBadRequest, "client_id must be 8 to 64 letters, digits, '-' or '_'")
		return false
	}
	if ok, wait := p.g.msgClient.take(clientID, rt.clock.Now()); !ok {
		rt.refused(w, r, p.g, "messages_per_minute_per_client", p.addr, wait,
			"You are sending messages too fast: wait "+waitText(wait)+" and try again.")
		return false
	}
	return true
}

func (rt *routes) handleMessage(w http.ResponseWriter, r *http.Request) {
	var in postedMessage
	p, ok := rt.admitPost(w, r, &in)
	if !ok {
		return
	}
	h, g, addr, ip := p.h, p.g, p.addr, ipKey(p.addr)
	text := strings.TrimSpace(in.Text)
	if text == "" && len(in.Files) == 0 && clientIDPattern.MatchString(in.ClientID) {
		writeError(w, http.StatusBadRequest, "text is empty")
		return
	}
	if !rt.admitClient(w, r, p, in.ClientID) {
		return
	}
	atts, err := uploadStore{rt.state}.attachments(in.ClientID, in.Files)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if g.newConvIP != nil && !rt.knownClient(r.Context(), h, g, in.ClientID) {
		if ok, wait := g.newConvIP.take(ip, rt.clock.Now()); !ok {
			rt.refused(w, r, g, "new_conversations_per_hour_per_ip", addr, wait,
				"Too many new chats from your network: wait "+waitText(wait)+" and try again.")
			return
		}
	}
	msg := core.InboundMessage{
		Platform:          Platform,
		ChannelThreadID:   in.ClientID,
		ChannelUserID:     in.ClientID,
		DisplayName:       displayName(in.Name),
		Text:              text,
		Attachments:       atts,
		PlatformMessageID: rt.nextID(),
		SentAt:            rt.clock.Now(),
		Direct:            true,
	}
	if err := h.HandleInbound(r.Context(), msg); err != nil {
		if errors.Is(err, core.ErrStoreUnavailable) || errors.Is(err, core.ErrInboundLost) {
			// Not kept anywhere: the browser is told to send it again
			// later, never 202 for a message that is then lost.
			if ok, held := g.notKept.allow(rt.clock.Now()); ok {
				rt.log.Error("the web chat refused a message it could not keep: the store cannot take it and the inbound spool "+
					"cannot hold it", "client", in.ClientID, "err", err, "refusals_not_logged", held)
			}
			refuse(w, http.StatusServiceUnavailable, notKeptRetry,
				"The bot cannot take messages right now: try again in "+waitText(notKeptRetry)+".")
			return
		}
		rt.log.Error("handing web message to the core", "client", in.ClientID, "err", err)
		writeError(w, http.StatusInternalServerError, "could not accept the message")
		return
	}
	g.known.add(in.ClientID)
	writeJSON(w, http.StatusAccepted, map[string]string{"id": msg.PlatformMessageID})
}

// decodeMessage reads one JSON object from body into in, and nothing
// after it but white space: a body with more is no message this page
// sent, and taking its first part would let a proxy or a script smuggle
// anything behind it. It returns the refusal's status and message, or 0.
func decodeMessage(body io.Reader, in any) (int, string) {
	dec := json.NewDecoder(body)
	err := dec.Decode(in)
	var tooBig *http.MaxBytesError
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			err = errTrailing
			if errors.As(next, &tooBig) {
				err = next
			}
		}
	}
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("message is larger than %d KiB", maxBodyBytes>>10)
	case errors.Is(err, errTrailing):
		return http.StatusBadRequest, "invalid JSON body: something follows the object"
	}
	return http.StatusBadRequest, "invalid JSON body"
}

// errTrailing is a body with more after its JSON object.
var errTrailing = errors.New("data after the JSON object")

// displayName cleans a browser-supplied name: trimmed, single-line, capped.
func displayName(name string) string {
	name = strings.Join(strings.Fields(name), " ")
	if utf8.RuneCountInString(name) > maxNameRunes {
		name = string([]rune(name)[:maxNameRunes])
	}
	if name == "" {
		return defaultName
	}
	return name
}

func (rt *routes) handleEvents(w http.ResponseWriter, r *http.Request) {
	g := rt.guards()
	if !rt.sameSite(w, r, g) {
		return
	}
	clientID := r.URL.Query().Get("client_id")
	if !clientIDPattern.MatchString(clientID) {
		writeError(w, http.StatusBadRequest, "client_id must be 8 to 64 letters, digits, '-' or '_'")
		return
	}
	addr := httpapi.ClientIP(r)
	sub, verdict := rt.hub.subscribe(clientID, ipKey(addr), g.streams)
	if verdict != admitted {
		rt.refuseStream(w, g, verdict, addr)
		return
	}
	defer rt.hub.leave(sub)

	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	// The connection ends with the stream (its lifetime, an eviction):
	// kept alive, it would hold a descriptor for a page that reconnects
	// on a new one anyway.
	hdr.Set("Connection", "close")
	w.WriteHeader(http.StatusOK)

	// write sends one frame and flushes it. Each write gets its own
	// deadline (replacing the server's WriteTimeout, which would cut a
	// long-lived stream) so a stalled browser cannot hold the handler.
	write := func(frame string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(rt.writeTimeout)) // unsupported: keep the server's
		if _, err := io.WriteString(w, frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// The stream ends after its lifetime: the page reconnects at once
	// and reloads its history, so nothing is lost, and a stream held by
	// whoever reads nothing must be opened again.
	var end <-chan time.Time
	if d := g.streamLifetime(); d > 0 {
		life := rt.clock.NewTimer(d)
		defer life.Stop()
		end = life.C()
	}
	// The first frame tells the browser (and tests) the stream is live:
	// the subscription already exists, so no later message is missed.
	if !write(": connected\n\n") {
		return
	}
	ping := time.NewTicker(rt.pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-end:
			return
		case <-sub.gone:
			if rt.hub.wasEvicted(sub) {
				rt.evicted(g, sub.ip)
			}
			return
		case <-sub.wake:
			for _, ev := range rt.hub.take(sub) {
				if !write("event: " + ev.name + "\ndata: " + string(ev.data) + "\n\n") {
					return
				}
			}
		case <-ping.C:
			if !write(": ping\n\n") {
				return
			}
		}
	}
}

func (rt *routes) handleHistory(w http.ResponseWriter, r *http.Request) {
	g := rt.guards()
	if !rt.sameSite(w, r, g) {
		return
	}
	q := r.URL.Query()
	clientID := q.Get("client_id")
	if !clientIDPattern.MatchString(clientID) {
		writeError(w, http.StatusBadRequest, "client_id must be 8 to 64 letters, digits, '-' or '_'")
		return
	}
	limit := defaultHistory
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxHistory {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be a number from 1 to %d", maxHistory))
			return
		}
		limit = n
	}
	if rt.isStopped() {
		writeError(w, http.StatusServiceUnavailable, "web chat is not running")
		return
	}
	out := []wireMessage{}
	if h := rt.inboundHandler(); h != nil {
		msgs, err := h.History(r.Context(), Platform, clientID, limit)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			rt.log.Error("reading web history", "client", clientID, "err", err)
			writeError(w, http.StatusInternalServerError, "could not load the history")
			return
		}
		out = historyForPage(clientID, msgs)
		if len(msgs) > 0 {
			g.known.add(clientID) // its posts start no new conversation
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out})
}

// historyForPage keeps what a user should see (their messages and the
// bot's, never system or tool messages), oldest first.
func historyForPage(client string, msgs []core.Message) []wireMessage {
	sorted := make([]core.Message, len(msgs))
	copy(sorted, msgs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	out := make([]wireMessage, 0, len(sorted))
	for _, m := range sorted {
		if m.Role != core.RoleUser && m.Role != core.RoleAssistant {
			continue
		}
		id := m.PlatformMessageID
		if id == "" {
			id = "m-" + strconv.FormatInt(m.ID, 10)
		}
		w := wireMessage{ID: id, Role: string(m.Role), Text: m.Content, At: m.CreatedAt.UTC().Format(time.RFC3339)}
		if m.Role == core.RoleAssistant && core.FormatOf(m) == core.FormatRichText {
			w.HTML = markup.HTML(m.Content)
		}
		if m.Role == core.RoleAssistant {
			if cs := core.MessageChoices(m); len(cs) > 0 {
				w.Choices = wireChoices(cs)
			}
		}
		if m.Role == core.RoleUser {
			w.Files = uploadFiles(client, core.AttachmentsOf(m))
		}
		out = append(out, w)
	}
	return out
}

// statusBody is GET /web/status: what the page tells its user about the
// bot. It is public, so it holds states and times only, never an error's
// text.
type statusBody struct {
	Model modelStatus `json:"model"`
}

// modelStatus is the model server's state (an llm.Health state: ok,
// unknown, auth, unreachable, server_error, rate_limited) and since when,
// in RFC 3339 (left out while unknown).
type modelStatus struct {
	State string `json:"state"`
	Since string `json:"since,omitempty"`
	// Detail is the last error's text (no secret is ever in it: what is
	// missing, which key was refused, how to fix it), only for a page
	// opened on the machine itself: the owner trying the bot.
	Detail string `json:"detail,omitempty"`
}

// handleStatus is GET /web/status: the model's health as the core last
// saw it (Host.ModelHealth), so the page can warn that replies may fail;
// unknown when the core reports none (or the chat is not running).
func (rt *routes) handleStatus(w http.ResponseWriter, r *http.Request) {
	st := modelStatus{State: llm.HealthUnknown}
	if host := rt.inboundHandler(); host != nil {
		h := host.ModelHealth()
		if h.State != "" {
			st.State = h.State
		}
		if !h.Since.IsZero() {
			st.Since = h.Since.UTC().Format(time.RFC3339)
		}
		if h.State != llm.HealthOK && onThisMachine(r) {
			st.Detail = h.Err
		}
	}
	writeJSON(w, http.StatusOK, statusBody{Model: st})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// onThisMachine reports whether r came straight from this machine: a
// loopback peer that no proxy forwarded. A reverse proxy on the same
// machine adds its forwarding headers, so its users are not taken for
// the owner.
func onThisMachine(r *http.Request) bool {
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" || r.Header.Get("X-Real-Ip") != "" {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}
