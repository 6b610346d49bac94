// Package irctest is a small IRC server for tests: it speaks enough of RFC
// 1459/2812 and IRCv3 (CAP 302, SASL PLAIN, batch, draft/multiline,
// server-time) to register a bot, deliver private messages from fake
// users, answer PINGs and record everything the bot sends, and it can
// drop the bot's connection, hold a nick, refuse a batch or go silent.
//
// Users are not connections: AddUser puts a nick on the server, PrivMsg
// makes it write to the bot, and Messages returns what the bot sent it,
// as the user's client shows it (a multiline batch as one message).
// Everything that waits takes a deadline; nothing sleeps.
package irctest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// ServerName is the fake server's name, the source of its numerics.
const ServerName = "irc.test"

// Options configure a Server; the zero value is a plain RFC 1459 server
// with CAP negotiation and nothing to negotiate.
type Options struct {
	// Password is the server password clients must send with PASS ("": none).
	Password string
	// SASLAccount and SASLPassword, when set, offer SASL PLAIN and accept
	// these credentials.
	SASLAccount, SASLPassword string
	// Multiline offers batch and draft/multiline with MaxBytes (default
	// 4096) and MaxLines (default 100).
	Multiline          bool
	MaxBytes, MaxLines int
	// ServerTime offers server-time: lines to the bot carry @time.
	ServerTime bool
	// CaseMapping is announced in RPL_ISUPPORT (default "rfc1459").
	CaseMapping string
	// TLS serves TLS with a self-signed certificate; ClientTLSConfig trusts it.
	TLS bool
	// Flood, when set, disconnects a registered client that sends lines
	// faster ("Excess Flood"), as servers do.
	Flood *Flood
}

// Flood is a server's flood limit: Burst lines at once, then PerSecond.
type Flood struct {
	Burst     int
	PerSecond float64
}

// Message is one message the bot delivered to a user.
type Message struct {
	// To is the target as the bot wrote it.
	To string
	// Text is what the user's client shows: a batch's lines joined by line
	// breaks (a multiline-concat line joined without one).
	Text string
	// Lines are the PRIVMSG lines it came in, as received.
	Lines []string
	// Batch is true for a draft/multiline batch.
	Batch bool
	// At is when the server relayed it.
	At time.Time
}

// Server is a fake IRC server listening on 127.0.0.1.
type Server struct {
	opts    Options
	ln      net.Listener
	tlsConf *tls.Config // what a client trusts
	wg      sync.WaitGroup

	mu            sync.Mutex
	changed       chan struct{} // closed and replaced on every change
	clients       []*client
	users         map[string]*user // by folded nick
	taken         map[string]bool  // nicks held by someone else
	received      []string
	messages      []Message
	violations    []string
	pongs         []string
	registrations []string // the nick of each registration, in order
	silent        bool
	refuseBatch   int
	down          bool
	refused       int // connections closed at once while down
}

type user struct {
	nick    string
	blocked bool // user mode +g: ignores the bot
}

// client is one connection (the bot's).
type client struct {
	s          *Server
	nc         net.Conn
	pass       string
	nick, user string
	capping    bool
	caps       map[string]bool
	sasl       string // AUTHENTICATE data gathered so far
	saslOn     bool
	registered bool
	gone       bool
	batch      *openBatch
	tat        time.Time   // flood control
	out        chan string // lines to write, in order; "" closes
	outClosed  bool
}

type openBatch struct {
	ref, target string
	lines       []string
	texts       []string
	concat      []bool
}

// NewServer starts a server; it stops when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 4096
	}
	if opts.MaxLines == 0 {
		opts.MaxLines = 100
	}
	if opts.CaseMapping == "" {
		opts.CaseMapping = "rfc1459"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("irctest: listen: %v", err)
	}
	s := &Server{opts: opts, ln: ln, changed: make(chan struct{}), users: map[string]*user{}, taken: map[string]bool{}}
	if opts.TLS {
		cert, pool := selfSigned(t)
		s.ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		s.tlsConf = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// Addr is the host:port to connect to.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// ClientTLSConfig trusts the server's certificate (nil without TLS).
func (s *Server) ClientTLSConfig() *tls.Config { return s.tlsConf }

// Close stops the server and drops every connection.
func (s *Server) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.clients {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Fold casefolds a nick as the server does.
func (s *Server) Fold(nick string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case s.opts.CaseMapping == "ascii":
		case r == '[' || r == ']' || r == '\\':
			return r + '{' - '['
		case r == '~' && s.opts.CaseMapping != "rfc1459-strict":
			return '^'
		}
		return r
	}, nick)
}

// AddUser puts a user with nick on the server.
func (s *Server) AddUser(nick string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[s.Fold(nick)]; !ok {
		s.users[s.Fold(nick)] = &user{nick: nick}
	}
}

// RemoveUser makes nick leave: messages to it get 401 ERR_NOSUCHNICK.
func (s *Server) RemoveUser(nick string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.users, s.Fold(nick))
}

// Block makes nick ignore the bot (user mode +g): messages to it get 716.
func (s *Server) Block(nick string) {
	s.AddUser(nick)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[s.Fold(nick)].blocked = true
}

// TakeNick makes nick held by someone else: NICK nick gets 433.
func (s *Server) TakeNick(nick string) { s.setTaken(nick, true) }

// ReleaseNick frees a nick TakeNick held.
func (s *Server) ReleaseNick(nick string) { s.setTaken(nick, false) }

func (s *Server) setTaken(nick string, taken bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken[s.Fold(nick)] = taken
}

// SetSilent makes the server stop answering PINGs, as a hung server.
func (s *Server) SetSilent(silent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent = silent
}

// SetDown makes the server close every new connection at once (down
// true), as a server restarting, and drops the bot's current one.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
	for _, c := range s.clients {
		if down && !c.gone {
			_ = c.nc.Close()
		}
	}
}

// WaitRefused waits until n connections were closed while down.
func (s *Server) WaitRefused(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	s.wait(t, timeout, func() bool { return s.refused >= n }, "%d refused connection(s)", n)
}

// RefuseNextBatch makes the server refuse the next multiline batch with
// FAIL BATCH MULTILINE_INVALID, delivering nothing of it.
func (s *Server) RefuseNextBatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseBatch++
}

// WaitRegistered waits until the bot has registered n times in all and
// returns the nick of the n-th registration.
func (s *Server) WaitRegistered(t testing.TB, n int, timeout time.Duration) string {
	t.Helper()
	var nick string
	s.wait(t, timeout, func() bool {
		if len(s.registrations) >= n {
			nick = s.registrations[n-1]
			return true
		}
		return false
	}, "%d registration(s)", n)
	return nick
}

// Registrations returns the nick of every registration so far.
func (s *Server) Registrations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.registrations...)
}

// PrivMsg makes from (put on the server if needed) send text to the bot.
func (s *Server) PrivMsg(t testing.TB, from, text string) {
	t.Helper()
	s.AddUser(from)
	s.toBot(t, func(bot string) string {
		return fmt.Sprintf(":%s!%s@users.irc.test PRIVMSG %s :%s", from, from, bot, text)
	})
}

// Send writes a raw line to the bot's connection; "{bot}" in it becomes
// the bot's nick.
func (s *Server) Send(t testing.TB, raw string) {
	t.Helper()
	s.toBot(t, func(bot string) string { return strings.ReplaceAll(raw, "{bot}", bot) })
}

// Drop closes the bot's connection without a word, as a network failure.
func (s *Server) Drop(t testing.TB) {
	t.Helper()
	c := s.bot(t)
	_ = c.nc.Close()
}

// WaitPong waits for a PONG with token from the bot.
func (s *Server) WaitPong(t testing.TB, token string, timeout time.Duration) {
	t.Helper()
	s.wait(t, timeout, func() bool {
		for _, p := range s.pongs {
			if p == token {
				return true
			}
		}
		return false
	}, "PONG %q", token)
}

// Messages returns what the bot delivered to nick, in order.
func (s *Server) Messages(nick string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if s.Fold(m.To) == s.Fold(nick) {
			out = append(out, m)
		}
	}
	return out
}

// WaitMessages waits until the bot has delivered n messages to nick and
// returns them all.
func (s *Server) WaitMessages(t testing.TB, nick string, n int, timeout time.Duration) []Message {
	t.Helper()
	s.wait(t, timeout, func() bool {
		got := 0
		for _, m := range s.messages {
			if s.Fold(m.To) == s.Fold(nick) {
				got++
			}
		}
		return got >= n
	}, "%d message(s) to %s", n, nick)
	return s.Messages(nick)
}

// Received returns every line clients sent, in order, as received.
func (s *Server) Received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.received...)
}

// WaitReceived waits for a line from a client that starts with prefix.
func (s *Server) WaitReceived(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	var got string
	s.wait(t, timeout, func() bool {
		for _, l := range s.received {
			if strings.HasPrefix(l, prefix) {
				got = l
				return true
			}
		}
		return false
	}, "a line starting %q", prefix)
	return got
}

// Violations lists what clients did that a real server would punish or
// mangle: a line over 512 bytes, invalid UTF-8, an empty PRIVMSG outside a
// batch, excess flood, a malformed batch.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// WaitDisconnected waits until no client is connected.
func (s *Server) WaitDisconnected(t testing.TB, timeout time.Duration) {
	t.Helper()
	s.wait(t, timeout, func() bool {
		for _, c := range s.clients {
			if !c.gone {
				return false
			}
		}
		return true
	}, "every client to disconnect")
}

// wait polls cond (with s.mu held) on every change until it holds.
func (s *Server) wait(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok, changed := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("irctest: waited %v for %s", timeout, fmt.Sprintf(what, args...))
		}
	}
}

// changedLocked wakes the waiters; s.mu is held.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// bot is the latest registered connection still open.
func (s *Server) bot(t testing.TB) *client {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.clients) - 1; i >= 0; i-- {
		if c := s.clients[i]; c.registered && !c.gone {
			return c
		}
	}
	t.Fatalf("irctest: no bot is connected")
	return nil
}

func (s *Server) toBot(t testing.TB, build func(bot string) string) {
	t.Helper()
	c := s.bot(t)
	s.mu.Lock()
	l := build(c.nick)
	s.mu.Unlock()
	c.send(l)
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := &client{s: s, nc: nc, caps: map[string]bool{}, out: make(chan string, 4096)}
		s.mu.Lock()
		if s.down {
			s.refused++
			s.changedLocked()
			s.mu.Unlock()
			_ = nc.Close()
			continue
		}
		s.clients = append(s.clients, c)
		s.changedLocked()
		s.mu.Unlock()
		s.wg.Add(2)
		go c.serve()
		go c.write()
	}
}

// serve reads the client's lines until it goes.
func (c *client) serve() {
	s := c.s
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		c.gone = true
		c.queueLocked("") // the writer closes the connection once the queue is out
		c.outClosed = true
		close(c.out)
		s.changedLocked()
		s.mu.Unlock()
	}()
	r := bufio.NewReader(c.nc)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return
		}
		l = strings.TrimRight(l, "\r\n")
		s.mu.Lock()
		s.received = append(s.received, l)
		quit := c.handle(l)
		s.changedLocked()
		s.mu.Unlock()
		if quit {
			return
		}
	}
}

// queueLocked queues one line for the client, with @time when it asked
// for it; "" closes the connection after the lines before it. s.mu is
// held.
func (c *client) queueLocked(l string) {
	if c.outClosed {
		return
	}
	if l != "" && c.caps["server-time"] {
		l = "@time=" + time.Now().UTC().Format("2006-01-02T15:04:05.000Z") + " " + l
	}
	select {
	case c.out <- l:
	default:
		c.s.violations = append(c.s.violations, "irctest: the client does not read its lines")
	}
}

// send queues one line for the client.
func (c *client) send(l string) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.queueLocked(l)
}

// reply queues a numeric or command from the server; s.mu is held.
func (c *client) reply(format string, args ...any) {
	c.queueLocked(fmt.Sprintf(":"+ServerName+" "+format, args...))
}

// write writes the queued lines in order.
func (c *client) write() {
	defer c.s.wg.Done()
	defer c.nc.Close()
	for l := range c.out {
		if l == "" {
			return
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.nc.Write([]byte(l + "\r\n")); err != nil {
			return
		}
	}
}

// handle acts on one line; s.mu is held. It reports whether the
// connection ends.
func (c *client) handle(l string) (quit bool) {
	s := c.s
	tags, rest := "", l
	if strings.HasPrefix(l, "@") {
		tags, rest, _ = strings.Cut(l[1:], " ")
	}
	if len(rest)+2 > 512 {
		s.violations = append(s.violations, fmt.Sprintf("a line of %d bytes (with CR LF) is over 512: %.60q…", len(rest)+2, rest))
	}
	if !utf8.ValidString(l) {
		s.violations = append(s.violations, fmt.Sprintf("a line is not UTF-8: %q", l))
	}
	cmd, params := split(rest)
	if c.registered && s.opts.Flood != nil && c.flooded() {
		s.violations = append(s.violations, "excess flood")
		c.reply("NOTICE %s :Excess Flood", c.nick)
		c.closeWith("ERROR :Closing Link: " + c.nick + " (Excess Flood)")
		return true
	}
	p := func(i int) string {
		if i < len(params) {
			return params[i]
		}
		return ""
	}
	nickOr := func() string {
		if c.nick == "" {
			return "*"
		}
		return c.nick
	}
	switch cmd {
	case "PASS":
		c.pass = p(0)
	case "CAP":
		switch strings.ToUpper(p(0)) {
		case "LS":
			c.capping = true
			c.reply("CAP %s LS :%s", nickOr(), strings.Join(s.offered(), " "))
		case "REQ":
			want := strings.Fields(p(1))
			offered := map[string]bool{}
			for _, o := range s.offered() {
				k, _, _ := strings.Cut(o, "=")
				offered[k] = true
			}
			for _, w := range want {
				if !offered[w] {
					c.reply("CAP %s NAK :%s", nickOr(), p(1))
					return false
				}
			}
			for _, w := range want {
				c.caps[w] = true
			}
			c.reply("CAP %s ACK :%s", nickOr(), p(1))
		case "END":
			c.capping = false
			return c.maybeRegister()
		}
	case "AUTHENTICATE":
		switch {
		case !c.caps["sasl"]:
			c.reply("904 %s :SASL authentication failed", nickOr())
		case p(0) == "PLAIN":
			c.saslOn, c.sasl = true, ""
			c.queueLocked("AUTHENTICATE +")
		case c.saslOn:
			if p(0) != "+" {
				c.sasl += p(0)
			}
			if len(p(0)) == 400 {
				return false
			}
			c.saslOn = false
			creds, _ := base64.StdEncoding.DecodeString(c.sasl)
			parts := strings.Split(string(creds), "\x00")
			if len(parts) == 3 && parts[1] == s.opts.SASLAccount && parts[2] == s.opts.SASLPassword {
				c.reply("900 %s %s!%s@bot.irc.test %s :You are now logged in as %s", nickOr(), nickOr(), c.user, parts[1], parts[1])
				c.reply("903 %s :SASL authentication successful", nickOr())
			} else {
				c.reply("904 %s :SASL authentication failed", nickOr())
			}
		}
	case "NICK":
		n := p(0)
		switch {
		case n == "" || strings.ContainsAny(n, " ,!@*?#&") || (n[0] >= '0' && n[0] <= '9') || len(n) > 30:
			c.reply("432 %s %s :Erroneous nickname", nickOr(), n)
		case s.nickInUse(c, n):
			c.reply("433 %s %s :Nickname is already in use", nickOr(), n)
		default:
			if c.registered {
				old := c.nick
				c.queueLocked(fmt.Sprintf(":%s!%s@bot.irc.test NICK :%s", old, c.user, n))
			}
			c.nick = n
			return c.maybeRegister()
		}
	case "USER":
		c.user = p(0)
		return c.maybeRegister()
	case "PING":
		if !s.silent {
			c.reply("PONG %s :%s", ServerName, p(0))
		}
	case "PONG":
		s.pongs = append(s.pongs, p(len(params)-1))
	case "QUIT":
		c.closeWith("ERROR :Closing Link: " + nickOr() + " (Quit: " + p(0) + ")")
		return true
	case "BATCH":
		c.batchLine(p(0), p(1), p(2))
	case "PRIVMSG":
		if !c.registered {
			c.reply("451 %s :You have not registered", nickOr())
			return false
		}
		c.privmsg(tags, p(0), p(1), l)
	}
	return false
}

// offered lists the capabilities the server offers.
func (s *Server) offered() []string {
	var caps []string
	if s.opts.SASLAccount != "" {
		caps = append(caps, "sasl=PLAIN")
	}
	if s.opts.Multiline {
		caps = append(caps, "batch", fmt.Sprintf("draft/multiline=max-bytes=%d,max-lines=%d", s.opts.MaxBytes, s.opts.MaxLines))
	}
	if s.opts.ServerTime {
		caps = append(caps, "server-time")
	}
	return caps
}

// nickInUse reports whether n is held by a user, by TakeNick or by
// another connected client; s.mu is held.
func (s *Server) nickInUse(self *client, n string) bool {
	f := s.Fold(n)
	if s.taken[f] || s.users[f] != nil {
		return true
	}
	for _, c := range s.clients {
		if c != self && !c.gone && c.registered && s.Fold(c.nick) == f {
			return true
		}
	}
	return false
}

// maybeRegister welcomes the client once NICK, USER and CAP END are in;
// s.mu is held. A wrong server password ends the connection.
func (c *client) maybeRegister() (quit bool) {
	s := c.s
	if c.registered || c.nick == "" || c.user == "" || c.capping {
		return false
	}
	if s.opts.Password != "" && c.pass != s.opts.Password {
		c.reply("464 %s :Password incorrect", c.nick)
		c.closeWith("ERROR :Closing Link: " + c.nick + " (Bad Password)")
		return true
	}
	c.registered = true
	s.registrations = append(s.registrations, c.nick)
	n := c.nick
	c.reply("001 %s :Welcome to the irctest network %s!%s@bot.irc.test", n, n, c.user)
	c.reply("005 %s CASEMAPPING=%s NICKLEN=30 CHANTYPES=#& :are supported by this server", n, s.opts.CaseMapping)
	c.reply("422 %s :MOTD File is missing", n)
	return false
}

// closeWith queues a last line and the end of the connection; s.mu is
// held.
func (c *client) closeWith(l string) {
	c.queueLocked(l)
	c.queueLocked("")
}

// flooded applies the flood limit to one more line; s.mu is held.
func (c *client) flooded() bool {
	f := c.s.opts.Flood
	interval := time.Duration(float64(time.Second) / f.PerSecond)
	now := time.Now()
	tat := c.tat
	if tat.Before(now) {
		tat = now
	}
	if tat.Add(-time.Duration(f.Burst-1) * interval).After(now) {
		return true
	}
	c.tat = tat.Add(interval)
	return false
}

// batchLine opens or closes a multiline batch; s.mu is held.
func (c *client) batchLine(ref, kind, target string) {
	s := c.s
	if r, ok := strings.CutPrefix(ref, "+"); ok {
		if kind != "draft/multiline" || !c.caps["draft/multiline"] || c.batch != nil {
			s.violations = append(s.violations, fmt.Sprintf("BATCH %s %s without draft/multiline or inside another batch", ref, kind))
			return
		}
		c.batch = &openBatch{ref: r, target: target}
		return
	}
	b := c.batch
	c.batch = nil
	if b == nil || strings.TrimPrefix(ref, "-") != b.ref {
		s.violations = append(s.violations, "BATCH "+ref+" closes no open batch")
		return
	}
	var text strings.Builder
	size := 0
	for i, t := range b.texts {
		if i > 0 && !b.concat[i] {
			text.WriteByte('\n')
			size++
		}
		text.WriteString(t)
		size += len(t)
	}
	fail := ""
	switch {
	case s.refuseBatch > 0:
		s.refuseBatch--
		fail = "MULTILINE_INVALID :refused by the test"
	case len(b.texts) == 0 || b.concat[0]:
		fail = "MULTILINE_INVALID :Invalid multiline batch"
	case size > s.opts.MaxBytes:
		fail = fmt.Sprintf("MULTILINE_MAX_BYTES %d :Multiline batch max-bytes exceeded", s.opts.MaxBytes)
	case len(b.texts) > s.opts.MaxLines:
		fail = fmt.Sprintf("MULTILINE_MAX_LINES %d :Multiline batch max-lines exceeded", s.opts.MaxLines)
	}
	if fail != "" {
		c.reply("FAIL BATCH %s", fail)
		return
	}
	c.deliver(Message{To: b.target, Text: text.String(), Lines: b.lines, Batch: true, At: time.Now()})
}

// privmsg relays (records) one PRIVMSG, or adds it to the open batch;
// s.mu is held.
func (c *client) privmsg(tags, target, text, raw string) {
	s := c.s
	relayed := fmt.Sprintf(":%s!%s@bot.irc.test PRIVMSG %s :%s\r\n", c.nick, c.user, target, text)
	if len(relayed) > 512 {
		s.violations = append(s.violations, fmt.Sprintf("relayed, the line would be %d bytes, over 512", len(relayed)))
	}
	var inBatch, concat bool
	for _, tag := range strings.Split(tags, ";") {
		inBatch = inBatch || (c.batch != nil && tag == "batch="+c.batch.ref)
		concat = concat || tag == "draft/multiline-concat"
	}
	if inBatch {
		if concat && text == "" {
			s.violations = append(s.violations, "an empty multiline-concat line")
		}
		c.batch.lines = append(c.batch.lines, raw)
		c.batch.texts = append(c.batch.texts, text)
		c.batch.concat = append(c.batch.concat, concat)
		return
	}
	if text == "" {
		s.violations = append(s.violations, "an empty PRIVMSG")
		return
	}
	c.deliver(Message{To: target, Text: text, Lines: []string{raw}, At: time.Now()})
}

// deliver hands a message to its user, or answers why not; s.mu is held.
func (c *client) deliver(m Message) {
	s := c.s
	if strings.HasPrefix(m.To, "#") || strings.HasPrefix(m.To, "&") {
		return // channels have no recorded members
	}
	u := s.users[s.Fold(m.To)]
	switch {
	case u == nil:
		c.reply("401 %s %s :No such nick/channel", c.nick, m.To)
	case u.blocked:
		c.reply("716 %s %s :is in +g mode (server-side ignore)", c.nick, u.nick)
	default:
		s.messages = append(s.messages, m)
	}
}

// split parses "COMMAND p1 p2 :trailing" (after tags).
func split(l string) (cmd string, params []string) {
	l = strings.TrimLeft(l, " ")
	if strings.HasPrefix(l, ":") {
		_, l, _ = strings.Cut(l, " ")
	}
	for l = strings.TrimLeft(l, " "); l != ""; l = strings.TrimLeft(l, " ") {
		if l[0] == ':' {
			params = append(params, l[1:])
			break
		}
		var p string
		p, l, _ = strings.Cut(l, " ")
		params = append(params, p)
	}
	if len(params) == 0 {
		return "", nil
	}
	return strings.ToUpper(params[0]), params[1:]
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("irctest: key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "irctest"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("irctest: certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("irctest: certificate: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// WaitNick waits until the bot's current connection goes by nick.
func (s *Server) WaitNick(t testing.TB, nick string, timeout time.Duration) {
	t.Helper()
	s.wait(t, timeout, func() bool {
		for i := len(s.clients) - 1; i >= 0; i-- {
			if c := s.clients[i]; c.registered && !c.gone {
				return c.nick == nick
			}
		}
		return false
	}, "the bot to be %s", nick)
}
