package ircadapter

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
)

// conn is one registered connection to the server. Its reader goroutine
// answers PINGs, hands private messages to the inbox and tells the send
// in flight (check) what the server said about it.
type conn struct {
	a    *Adapter
	nc   net.Conn
	r    *bufio.Reader
	line []byte // a line read in part when a read timed out

	wmu  sync.Mutex // one writer at a time
	done chan struct{}
	once sync.Once

	mu         sync.Mutex
	closeErr   error
	nick       string            // the nick the server knows the bot by
	casemap    string            // ISUPPORT CASEMAPPING
	mlBytes    int               // draft/multiline max-bytes (0: no multiline)
	mlLines    int               // draft/multiline max-lines (0: no limit)
	serverTime bool              // server-time was acknowledged
	batches    map[string]*batch // inbound multiline batches being received
	check      *check            // the send waiting for its PONG
}

// batch is a multiline message a user is sending (IRCv3 draft/multiline).
type batch struct {
	first message
	text  strings.Builder
}

// check is a send waiting for the PONG to the PING sent after it: the
// server answers in order, so by then it has refused the lines (401 no
// such nick, 716 blocked, FAIL BATCH) or relayed them.
type check struct {
	target string // casefolded
	token  string
	done   chan struct{}
	err    error
}

var (
	// errConnLost: the connection ended before the server confirmed a send.
	errConnLost = errors.New("the IRC connection was lost before the server confirmed the message")
	// errMultilineRefused: the server refused a multiline batch.
	errMultilineRefused = errors.New("the server refused a multiline batch")
)

// connect dials the server and registers; the connection it returns is
// registered, with its reader running.
func (a *Adapter) connect(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", a.Server)
	if err != nil {
		return nil, err
	}
	if a.TLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if a.tlsConfig != nil {
			cfg = a.tlsConfig.Clone()
		}
		cfg.ServerName, _, _ = net.SplitHostPort(a.Server)
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	c := &conn{a: a, nc: nc, r: bufio.NewReaderSize(nc, 4096), done: make(chan struct{}),
		nick: a.Nick, casemap: "rfc1459", batches: map[string]*batch{}}
	// Registration must finish within ctx: its end unblocks any read.
	_ = nc.SetDeadline(time.Now().Add(a.timeout))
	unwatch := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	err = c.register()
	if !unwatch() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.closeWith(err)
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	c.mu.Lock()
	a.log.Info("registered on the IRC server", "server", a.Server, "nick", c.nick, "tls", a.TLS, "multiline_max_bytes", c.mlBytes)
	c.mu.Unlock()
	a.wg.Add(1)
	go c.read()
	return c, nil
}

// register runs CAP negotiation (SASL, multiline, server-time), NICK and
// USER, and returns at the end of the MOTD.
func (c *conn) register() error {
	a := c.a
	if a.Password != "" && !a.SASL {
		if err := c.write(line("PASS", a.Password.Reveal())); err != nil {
			return err
		}
	}
	for _, l := range []string{"CAP LS 302", line("NICK", c.nick), line("USER", a.Nick, "0", "*", a.realname)} {
		if err := c.write(l); err != nil {
			return err
		}
	}
	offered := map[string]string{}
	loggedIn, welcomed, tries := !a.SASL, false, 0
	for {
		m, err := c.readMessage()
		if err != nil {
			return fmt.Errorf("registering: %w", err)
		}
		switch m.command {
		case "PING":
			err = c.write(line("PONG", m.params...))
		case "CAP":
			err = c.negotiate(m, offered)
		case "AUTHENTICATE":
			if m.param(0) == "+" {
				err = c.authenticate()
			}
		case "903": // RPL_SASLSUCCESS
			loggedIn = true
			err = c.write("CAP END")
		case "902", "904", "905", "906", "908":
			return fmt.Errorf("SASL login as %q failed (%s): fix adapters.irc.password or nick", a.Nick, m.param(len(m.params)-1))
		case "433": // ERR_NICKNAMEINUSE: take an alternative, ask for ours back later
			if tries++; tries > 5 {
				return fmt.Errorf("the nicks %q to %q are all in use", a.Nick, c.nick)
			}
			c.nick = a.Nick[:min(len(a.Nick), 30-tries)] + strings.Repeat("_", tries)
			a.log.Warn("nick in use; trying another", "nick", a.Nick, "instead", c.nick)
			err = c.write(line("NICK", c.nick))
		case "432":
			return fmt.Errorf("the server refused the nick %q (%s): fix adapters.irc.nick", c.nick, m.param(len(m.params)-1))
		case "464": // ERR_PASSWDMISMATCH
			return fmt.Errorf("the server refused the password (%s): fix adapters.irc.password", m.param(len(m.params)-1))
		case "465": // ERR_YOUREBANNEDCREEP
			return fmt.Errorf("the server bans the bot: %s", m.param(len(m.params)-1))
		case "ERROR":
			return fmt.Errorf("the server closed the connection: %s", m.param(0))
		case "001":
			if !loggedIn {
				return errors.New("the server does not offer SASL, which adapters.irc.sasl asks for")
			}
			c.mu.Lock()
			c.nick = m.param(0)
			c.mu.Unlock()
			welcomed = true
		case "005":
			c.isupport(m)
		case "376", "422": // end of MOTD, or none: registered
			if welcomed {
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
}

// negotiate answers the server's CAP messages: request what the bot can
// use of what is offered, start SASL once acknowledged, or end.
func (c *conn) negotiate(m message, offered map[string]string) error {
	list := strings.Fields(m.param(len(m.params) - 1))
	switch m.param(1) {
	case "LS":
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			offered[k] = v
		}
		if m.param(2) == "*" && len(m.params) == 4 {
			return nil // more CAP LS lines follow
		}
		var want []string
		if c.a.SASL {
			mechs, ok := offered["sasl"]
			if !ok || (mechs != "" && !strings.Contains(","+mechs+",", ",PLAIN,")) {
				return errors.New("the server does not offer SASL PLAIN, which adapters.irc.sasl asks for")
			}
			want = append(want, "sasl")
		}
		if _, ok := offered["batch"]; ok {
			if _, ok := offered["draft/multiline"]; ok {
				want = append(want, "batch", "draft/multiline")
			}
		}
		if _, ok := offered["server-time"]; ok {
			want = append(want, "server-time")
		}
		if len(want) == 0 {
			return c.write("CAP END")
		}
		return c.write(line("CAP", "REQ", strings.Join(want, " ")))
	case "ACK":
		sasl := false
		c.mu.Lock()
		for _, k := range list {
			switch k {
			case "sasl":
				sasl = true
			case "draft/multiline":
				for _, kv := range strings.Split(offered[k], ",") {
					k, v, _ := strings.Cut(kv, "=")
					n, _ := strconv.Atoi(v)
					switch k {
					case "max-bytes":
						c.mlBytes = n
					case "max-lines":
						c.mlLines = n
					}
				}
			case "server-time":
				c.serverTime = true
			}
		}
		c.mu.Unlock()
		if sasl {
			return c.write("AUTHENTICATE PLAIN")
		}
		return c.write("CAP END")
	case "NAK":
		if c.a.SASL {
			return errors.New("the server refused the SASL capability")
		}
		return c.write("CAP END")
	}
	return nil
}

// authenticate sends the SASL PLAIN credentials in 400-byte pieces.
func (c *conn) authenticate() error {
	creds := base64.StdEncoding.EncodeToString([]byte(c.a.Nick + "\x00" + c.a.Nick + "\x00" + c.a.Password.Reveal()))
	for {
		n := min(len(creds), 400)
		if err := c.write("AUTHENTICATE " + creds[:n]); err != nil {
			return err
		}
		creds = creds[n:]
		if n < 400 {
			return nil
		}
		if creds == "" {
			return c.write("AUTHENTICATE +")
		}
	}
}

// isupport takes what the bot needs from RPL_ISUPPORT.
func (c *conn) isupport(m message) {
	for _, kv := range m.params {
		if v, ok := strings.CutPrefix(kv, "CASEMAPPING="); ok {
			c.mu.Lock()
			c.casemap = v
			c.mu.Unlock()
		}
	}
}

// read handles the server's lines until the connection ends. After
// keepalive of silence it PINGs the server; silence after that ends the
// connection (and the adapter reconnects).
func (c *conn) read() {
	defer c.a.wg.Done()
	pinged := false
	for {
		wait := c.a.keepalive
		if pinged {
			wait = c.a.timeout
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(wait))
		m, err := c.readMessage()
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout() && !pinged:
			pinged = true
			_ = c.write(line("PING", "keepalive"))
			continue
		case err != nil:
			c.closeWith(err)
			return
		}
		pinged = false
		c.handle(m)
	}
}

// handle acts on one line from a registered connection.
func (c *conn) handle(m message) {
	switch m.command {
	case "PING":
		_ = c.write(line("PONG", m.params...))
	case "PONG":
		c.confirmed(m.param(len(m.params) - 1))
	case "PRIVMSG":
		c.privmsg(m)
	case "BATCH":
		c.batch(m)
	case "NICK":
		c.mu.Lock()
		if casefold(c.casemap, m.nick()) == casefold(c.casemap, c.nick) {
			c.nick = m.param(0)
		}
		c.mu.Unlock()
	case "005":
		c.isupport(m)
	case "401": // ERR_NOSUCHNICK: the user is not online; IRC keeps no messages
		c.failed(m.param(1), &core.PermanentError{Reason: "no such nick", Err: fmt.Errorf("%s is not on the server", m.param(1))})
	case "716": // ERR_TARGUMODEG: the user ignores the bot (user mode +g)
		c.failed(m.param(1), &core.PermanentError{Reason: "blocked", Err: fmt.Errorf("%s ignores private messages from the bot", m.param(1))})
	case "FAIL":
		if m.param(0) == "BATCH" {
			c.failed("", fmt.Errorf("%w: %s", errMultilineRefused, m.param(1)))
		}
	case "ERROR":
		c.a.log.Warn("the IRC server is closing the connection", "message", m.param(0))
	}
}

// privmsg hands a private message to the inbox. Channel messages, the
// bot's own, CTCP requests and messages inside a multiline batch (handed
// over when the batch ends) are not passed on.
func (c *conn) privmsg(m message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.batches[m.tags["batch"]]; ok {
		if _, concat := m.tags["draft/multiline-concat"]; !concat && b.text.Len() > 0 {
			b.text.WriteByte('\n')
		}
		b.text.WriteString(m.param(1))
		return
	}
	from, target, text := m.nick(), m.param(0), m.param(1)
	switch {
	case from == "" || casefold(c.casemap, from) == casefold(c.casemap, c.nick):
		return // the server's, or the bot's own
	case casefold(c.casemap, target) != casefold(c.casemap, c.nick):
		c.a.log.Debug("ignoring a message that is not private", "target", target)
		return
	case strings.HasPrefix(text, "\x01"):
		c.a.log.Debug("ignoring a CTCP request", "from", from)
		return
	}
	text = decodeText(text)
	if strings.TrimSpace(text) == "" {
		return
	}
	id, ok := m.tags["msgid"]
	if !ok {
		id = c.a.nextID("in")
	}
	at := c.a.clock.Now()
	if t, err := time.Parse(time.RFC3339Nano, m.tags["time"]); err == nil && c.serverTime {
		at = t
	}
	thread := casefold(c.casemap, from)
	c.a.inbox.push(core.InboundMessage{Platform: Platform, ChannelThreadID: thread, ChannelUserID: thread,
		DisplayName: from, Text: text, PlatformMessageID: id, SentAt: at, Direct: true})
}

// batch collects a user's multiline message ("BATCH +ref draft/multiline
// target" ... "BATCH -ref") and hands it over whole at its end.
func (c *conn) batch(m message) {
	ref := m.param(0)
	c.mu.Lock()
	if r, ok := strings.CutPrefix(ref, "+"); ok {
		if m.param(1) == "draft/multiline" {
			c.batches[r] = &batch{first: m}
		}
		c.mu.Unlock()
		return
	}
	b, ok := c.batches[strings.TrimPrefix(ref, "-")]
	delete(c.batches, strings.TrimPrefix(ref, "-"))
	c.mu.Unlock()
	if ok {
		c.privmsg(message{tags: b.first.tags, source: b.first.source, command: "PRIVMSG",
			params: []string{b.first.param(2), b.text.String()}})
	}
}

// readMessage reads the next line, keeping a line cut by a read timeout
// for the next call.
func (c *conn) readMessage() (message, error) {
	for {
		b, err := c.r.ReadSlice('\n')
		c.line = append(c.line, b...)
		if len(c.line) > 16<<10 {
			return message{}, errors.New("the server sent a line over 16 KiB")
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return message{}, err
		}
		l := strings.TrimRight(string(c.line), "\r\n")
		c.line = c.line[:0]
		if m, ok := parse(l); ok {
			return m, nil
		}
	}
}

// write sends one line. A failed write ends the connection.
func (c *conn) write(s string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(s, c.a.timeout)
}

func (c *conn) writeLocked(s string, timeout time.Duration) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c.nc, s+"\r\n"); err != nil {
		c.closeWith(err)
		return err
	}
	return nil
}

// quit says goodbye, unless a write is stuck or it takes over a second,
// and closes the connection.
func (c *conn) quit() {
	if c.wmu.TryLock() {
		_ = c.writeLocked(line("QUIT", "Goodbye"), time.Second)
		c.wmu.Unlock()
	}
	c.closeWith(errStopped)
}

// closeWith closes the connection once, remembering why.
func (c *conn) closeWith(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.closeErr = err
		c.mu.Unlock()
		_ = c.nc.Close()
		close(c.done)
	})
}

func (c *conn) close() { c.closeWith(errStopped) }

func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

func (c *conn) currentNick() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nick
}

// maxMessage is the longest text one message may hold: a multiline
// batch's max-bytes, or one line's room.
func (c *conn) maxMessage() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mlBytes > 0 {
		return c.mlBytes
	}
	return lineRoom(c.nick, "")
}

// begin registers the send to target that the next PONG with token
// confirms.
func (c *conn) begin(target, token string) *check {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check = &check{target: casefold(c.casemap, target), token: token, done: make(chan struct{})}
	return c.check
}

// confirmed settles the check waiting for token.
func (c *conn) confirmed(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.check != nil && c.check.token == token {
		close(c.check.done)
		c.check = nil
	}
}

// failed records the server's refusal of the send in flight (to target;
// "" matches any).
func (c *conn) failed(target string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.check != nil && c.check.err == nil && (target == "" || casefold(c.casemap, target) == c.check.target) {
		c.check.err = err
	}
}
