package ircadapter

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/examples/ircadapter/irctest"
)

const waitFor = 10 * time.Second

type testBundle struct {
	srv  *irctest.Server
	a    *Adapter
	rec  *adaptertest.Recorder
	logs *coretest.Logs
}

// setup makes a server with opts and an adapter pointed at it (nick
// "parley", fast pacing, short backoff), changed by configure; the
// adapter is provisioned and validated but not started.
func setup(t *testing.T, opts irctest.Options, configure func(a *Adapter)) *testBundle {
	t.Helper()
	b := &testBundle{srv: irctest.NewServer(t, opts), a: New(), rec: adaptertest.NewRecorder(), logs: &coretest.Logs{}}
	b.a.Server = b.srv.Addr()
	b.a.SendRate = Rate{PerSecond: 1000, Burst: 100}
	b.a.backoffMin, b.a.backoffMax, b.a.timeout = 10*time.Millisecond, 80*time.Millisecond, 5*time.Second
	require.NoError(t, b.a.Provision(context.Background(), core.Env{Logger: b.logs.Logger(), BotName: "Subaru"}))
	if configure != nil {
		configure(b.a)
	}
	require.NoError(t, b.a.Validate())
	return b
}

// start starts the adapter and stops it when the test ends.
func (b *testBundle) start(t *testing.T) {
	t.Helper()
	require.NoError(t, b.tryStart())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.a.Stop(ctx))
	})
}

func (b *testBundle) tryStart() error {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.a.Start(ctx, b.rec)
}

// send sends text to nick and requires success.
func (b *testBundle) send(t *testing.T, nick, text string) core.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := b.a.Send(ctx, core.OutboundMessage{ChannelThreadID: nick, Text: text})
	require.NoError(t, err)
	return res
}

// texts returns the texts of msgs.
func texts(msgs []irctest.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text
	}
	return out
}

// squeeze drops all whitespace, to compare text cut at spaces.
func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

func TestLineByLine(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, nil)
	b.start(t)
	b.srv.AddUser("alice")
	long := strings.Repeat("Grüße schön 日本語 naïve café ", 40) // ~1000 bytes
	word := strings.Repeat("🙂", 150)                          // 600 bytes, no space
	text := "first line\r\n\n  \nsecond line\n" + long + "\n" + word
	res := b.send(t, "alice", text)

	msgs := b.srv.WaitMessages(t, "alice", len(res.PlatformMessageIDs), waitFor)
	require.Empty(t, b.srv.Violations(), "every line within 512 bytes, UTF-8, none empty")
	require.Len(t, msgs, len(res.PlatformMessageIDs), "one id per line the user sees")
	got := texts(msgs)
	require.Equal(t, []string{"first line", "second line"}, got[:2], "blank lines are not sent")
	room := lineRoom("parley", "alice")
	for i, m := range msgs {
		require.False(t, m.Batch)
		require.LessOrEqual(t, len(m.Text), room, "line %d", i)
		require.True(t, utf8.ValidString(m.Text), "line %d cut inside a character", i)
	}
	require.Equal(t, squeeze(text), squeeze(strings.Join(got, " ")), "nothing lost, nothing reordered")
	words := strings.Fields(long)
	for _, piece := range got[2 : len(got)-2] {
		for _, w := range strings.Fields(piece) {
			require.Contains(t, words, w, "a word was cut: %q", piece)
		}
	}
	require.Equal(t, word, got[len(got)-2]+got[len(got)-1], "a word longer than a line is cut between characters")
	for i, id := range res.PlatformMessageIDs {
		require.NotContains(t, res.PlatformMessageIDs[:i], id, "ids are distinct")
	}
}

func TestMultilineLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{Multiline: true, MaxBytes: 700, MaxLines: 6}, nil)
	b.start(t)
	b.srv.AddUser("alice")
	require.Equal(t, 700, b.a.Capabilities().MaxMessageLength)
	para := strings.Repeat("Grüße schön 日本語 naïve café ", 12) // ~300 bytes
	text := strings.Join([]string{para, "short", "two\nlines", para + para, "```\ncode  with  spaces\n```"}, "\n\n")
	res := b.send(t, "alice", text)

	msgs := b.srv.WaitMessages(t, "alice", len(res.PlatformMessageIDs), waitFor)
	require.Empty(t, b.srv.Violations())
	require.Len(t, msgs, len(res.PlatformMessageIDs))
	require.Greater(t, len(msgs), 2, "the text needs several batches")
	for i, m := range msgs {
		require.LessOrEqual(t, len(m.Text), 700, "message %d over max-bytes", i)
		require.LessOrEqual(t, len(m.Lines), 6, "message %d over max-lines", i)
		require.Contains(t, text, m.Text, "message %d is not a stretch of the text as written", i)
		require.Equal(t, len(m.Lines) > 1, m.Batch)
	}
	require.Equal(t, squeeze(text), squeeze(strings.Join(texts(msgs), "")))
	require.Contains(t, texts(msgs), "```\ncode  with  spaces\n```", "a code block that fits stays whole")
}

func TestMultilineRefusedFallsBackToLines(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{Multiline: true}, nil)
	b.start(t)
	b.srv.AddUser("alice")
	b.srv.RefuseNextBatch()
	res := b.send(t, "alice", "one\ntwo\nthree")
	require.Len(t, res.PlatformMessageIDs, 3)
	require.Equal(t, []string{"one", "two", "three"}, texts(b.srv.WaitMessages(t, "alice", 3, waitFor)),
		"the refused batch showed nothing; its lines come one by one")
	b.send(t, "alice", "four\nfive")
	require.Equal(t, []string{"one", "two", "three", "four", "five"}, texts(b.srv.WaitMessages(t, "alice", 5, waitFor)))
	require.Contains(t, b.logs.String(), "sending line by line")
}

func TestInbound(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{Multiline: true}, nil)
	b.start(t)
	srv := b.srv
	srv.Send(t, ":alice!a@users.irc.test NOTICE {bot} :a notice is never answered")
	srv.Send(t, ":alice!a@users.irc.test PRIVMSG {bot} :\x01VERSION\x01")
	srv.Send(t, ":alice!a@users.irc.test PRIVMSG #chat :in a channel")
	srv.Send(t, ":irc.test PRIVMSG {bot} :from the server")
	srv.Send(t, ":alice!a@users.irc.test PRIVMSG {bot} :\x02bold\x02 \x0304,01red\x03 \x1fplain\x0f caf\xe9")
	srv.Send(t, ":alice!a@users.irc.test BATCH +m1 draft/multiline {bot}")
	srv.Send(t, "@batch=m1 :alice!a@users.irc.test PRIVMSG {bot} :line one,")
	srv.Send(t, "@batch=m1;draft/multiline-concat :alice!a@users.irc.test PRIVMSG {bot} : continued")
	srv.Send(t, "@batch=m1 :alice!a@users.irc.test PRIVMSG {bot} :line two")
	srv.Send(t, ":alice!a@users.irc.test BATCH -m1")
	srv.PrivMsg(t, "Alice", "sentinel")

	msgs := b.rec.Wait(t, 3, waitFor)
	require.Equal(t, "bold red plain café", msgs[0].Text, "formatting stripped, Latin-1 read")
	require.Equal(t, "line one, continued\nline two", msgs[1].Text, "a multiline batch is one message")
	require.Equal(t, "sentinel", msgs[2].Text)
	for _, m := range msgs {
		require.Equal(t, "alice", m.ChannelThreadID)
		require.Equal(t, "alice", m.ChannelUserID)
		require.True(t, m.Direct)
	}
	require.Equal(t, "Alice", msgs[2].DisplayName)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.a.Stop(ctx))
	require.Len(t, b.rec.Messages(), 3, "nothing else reached the core")
}

func TestServerPing(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, nil)
	b.start(t)
	b.srv.Send(t, ":irc.test PING :tok-42")
	b.srv.WaitPong(t, "tok-42", waitFor)
}

func TestReconnectAfterDrop(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, nil)
	b.start(t)
	b.srv.AddUser("alice")
	b.srv.Drop(t)
	b.srv.WaitRegistered(t, 2, waitFor)
	b.srv.PrivMsg(t, "alice", "still there?")
	require.Equal(t, "still there?", b.rec.Wait(t, 1, waitFor)[0].Text)
	b.send(t, "alice", "yes")
	require.Equal(t, []string{"yes"}, texts(b.srv.WaitMessages(t, "alice", 1, waitFor)))
	require.NoError(t, b.a.Health())
}

func TestReconnectBacksOff(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, nil)
	b.start(t)
	b.srv.AddUser("alice")
	b.srv.SetDown(true)
	b.srv.WaitRefused(t, 4, waitFor)
	require.ErrorContains(t, b.a.Health(), "not connected")
	// A send while the server is away waits for it.
	sent := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, err := b.a.Send(ctx, core.OutboundMessage{ChannelThreadID: "alice", Text: "back"})
		sent <- err
	}()
	b.srv.SetDown(false)
	b.srv.WaitRegistered(t, 2, waitFor)
	require.NoError(t, <-sent)
	require.Equal(t, []string{"back"}, texts(b.srv.WaitMessages(t, "alice", 1, waitFor)), "delivered once")
	logs := b.logs.String()
	for _, d := range []string{"20ms", "40ms", "80ms"} {
		require.Contains(t, logs, "retry_in="+d, "the backoff doubles up to its maximum")
	}
	require.NotContains(t, logs, "retry_in=160ms")
}

func TestKeepalive(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, func(a *Adapter) { a.keepalive, a.timeout = 100*time.Millisecond, time.Second })
	b.start(t)
	b.srv.SetSilent(true)
	b.srv.WaitReceived(t, "PING keepalive", waitFor)
	b.srv.SetSilent(false)
	b.srv.WaitRegistered(t, 2, waitFor)
	require.Contains(t, b.logs.String(), "reconnecting")
}

func TestNickInUse(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, func(a *Adapter) { a.regainEvery = 20 * time.Millisecond })
	b.srv.TakeNick("parley")
	b.start(t)
	require.Equal(t, "parley_", b.srv.WaitRegistered(t, 1, waitFor))
	b.srv.PrivMsg(t, "alice", "hi parley_")
	b.rec.Wait(t, 1, waitFor)

	b.srv.ReleaseNick("parley")
	b.srv.WaitNick(t, "parley", waitFor)
	b.srv.PrivMsg(t, "alice", "hi parley")
	require.Equal(t, "hi parley", b.rec.Wait(t, 2, waitFor)[1].Text, "a DM to the regained nick is direct")

	long := strings.Repeat("n", 30) // the longest nick: "_" replaces its end
	full := setup(t, irctest.Options{}, func(a *Adapter) { a.Nick = long })
	full.srv.TakeNick(long)
	full.start(t)
	require.Equal(t, long[:29]+"_", full.srv.WaitRegistered(t, 1, waitFor))
}

func TestServerPassword(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{Password: "hunter2 x"}, func(a *Adapter) { a.Password = "hunter2 x" })
	b.start(t)
	require.Contains(t, b.srv.Received(), "PASS :hunter2 x")

	bad := setup(t, irctest.Options{Password: "right"}, func(a *Adapter) { a.Password = "wrong" })
	require.ErrorContains(t, bad.tryStart(), "the server refused the password (Password incorrect): fix adapters.irc.password")
}

func TestSASL(t *testing.T) {
	t.Parallel()
	opts := irctest.Options{SASLAccount: "parley", SASLPassword: "s3cret pass"}
	b := setup(t, opts, func(a *Adapter) { a.SASL, a.Password = true, "s3cret pass" })
	b.start(t)
	got := b.srv.Received()
	require.Contains(t, got, "AUTHENTICATE PLAIN")
	require.Contains(t, got, "AUTHENTICATE "+base64.StdEncoding.EncodeToString([]byte("parley\x00parley\x00s3cret pass")))
	for _, l := range got {
		require.False(t, strings.HasPrefix(l, "PASS"), "no server password with SASL")
	}

	bad := setup(t, opts, func(a *Adapter) { a.SASL, a.Password = true, "wrong" })
	require.ErrorContains(t, bad.tryStart(), "SASL login as \"parley\" failed")

	none := setup(t, irctest.Options{}, func(a *Adapter) { a.SASL, a.Password = true, "s3cret pass" })
	require.ErrorContains(t, none.tryStart(), "does not offer SASL")
	require.NotContains(t, strings.Join(none.srv.Received(), "\n"), "s3cret", "the password is never sent without SASL")
}

// TestPasswordNeverLogged runs every path that handles the password
// (server password, SASL, both failing, a reconnection, traffic) with a
// debug logger, and requires that neither the logs nor the errors nor the
// adapter's printed config show it.
func TestPasswordNeverLogged(t *testing.T) {
	t.Parallel()
	const secret = "Tr0ub4dor-SECRET"
	forms := []string{secret, base64.StdEncoding.EncodeToString([]byte("parley\x00parley\x00" + secret))}
	var errs []string
	cfg := New()
	cfg.Password = secret
	printed := fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg.Password, cfg.Password)
	check := func(b *testBundle) {
		t.Helper()
		require.Contains(t, strings.Join(b.srv.Received(), "\n"), "AUTHENTICATE", "")
		shown := b.logs.String() + printed + strings.Join(errs, "\n")
		for _, f := range forms {
			require.NotContains(t, shown, f)
		}
	}

	pass := setup(t, irctest.Options{Password: secret}, func(a *Adapter) { a.Password = secret })
	pass.start(t)
	pass.srv.Drop(t)
	pass.srv.WaitRegistered(t, 2, waitFor)
	pass.srv.PrivMsg(t, "alice", "hello")
	pass.rec.Wait(t, 1, waitFor)
	pass.send(t, "alice", "hi")
	require.Contains(t, pass.srv.Received(), "PASS "+secret, "the server got the password")
	require.NotContains(t, pass.logs.String()+printed, secret)

	wrongPass := setup(t, irctest.Options{Password: "other"}, func(a *Adapter) { a.Password = secret })
	errs = append(errs, fmt.Sprint(wrongPass.tryStart()))
	require.NotContains(t, wrongPass.logs.String()+strings.Join(errs, ""), secret)

	opts := irctest.Options{SASLAccount: "parley", SASLPassword: secret}
	sasl := setup(t, opts, func(a *Adapter) { a.SASL, a.Password = true, secret })
	sasl.start(t)
	check(sasl)
	wrongSASL := setup(t, irctest.Options{SASLAccount: "parley", SASLPassword: "other"}, func(a *Adapter) { a.SASL, a.Password = true, secret })
	errs = append(errs, fmt.Sprint(wrongSASL.tryStart()))
	check(wrongSASL)
}

func TestTLS(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{TLS: true}, nil)
	b.a.TLS = true
	b.a.tlsConfig = b.srv.ClientTLSConfig()
	b.start(t)
	b.srv.PrivMsg(t, "alice", "over TLS")
	require.Equal(t, "over TLS", b.rec.Wait(t, 1, waitFor)[0].Text)
	b.send(t, "alice", "encrypted")
	require.Equal(t, []string{"encrypted"}, texts(b.srv.WaitMessages(t, "alice", 1, waitFor)))

	untrusted := setup(t, irctest.Options{TLS: true}, func(a *Adapter) { a.TLS = true })
	require.ErrorContains(t, untrusted.tryStart(), "certificate")
}

// TestSendRate checks send_rate against a server that disconnects a client
// sending over 4 lines at once or 20 a second: paced under it, a reply of
// eight lines goes out whole on one connection; unpaced, the server
// kills the connection.
func TestSendRate(t *testing.T) {
	t.Parallel()
	flood := &irctest.Flood{Burst: 4, PerSecond: 20}
	text := "1\n2\n3\n4\n5\n6\n7\n8"

	paced := setup(t, irctest.Options{Flood: flood}, func(a *Adapter) { a.SendRate = Rate{PerSecond: 15, Burst: 3} })
	paced.start(t)
	paced.srv.AddUser("alice")
	paced.send(t, "alice", text)
	require.Len(t, paced.srv.WaitMessages(t, "alice", 8, waitFor), 8)
	require.Empty(t, paced.srv.Violations())
	require.Len(t, paced.srv.Registrations(), 1)

	unpaced := setup(t, irctest.Options{Flood: flood}, nil) // 1000 a second
	unpaced.start(t)
	unpaced.srv.AddUser("alice")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _ = unpaced.a.Send(ctx, core.OutboundMessage{ChannelThreadID: "alice", Text: text})
	require.Contains(t, unpaced.srv.Violations(), "excess flood", "the fake's flood limit works")
}

func TestSendPermanentErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, nil)
	b.start(t)
	for _, target := range []string{"", "#chan", "two words", "nobody"} {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		_, err := b.a.Send(ctx, core.OutboundMessage{ChannelThreadID: target, Text: "hi"})
		cancel()
		require.True(t, core.IsPermanent(err), "%q: %v", target, err)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{Multiline: true}, nil)
	detail, err := b.a.Probe(context.Background())
	require.NoError(t, err)
	require.Equal(t, b.srv.Addr()+" as parley, multiline", detail)
	b.srv.WaitReceived(t, "QUIT", waitFor)
	b.srv.WaitDisconnected(t, waitFor)

	b.srv.TakeNick("parley")
	detail, err = b.a.Probe(context.Background())
	require.NoError(t, err)
	require.Contains(t, detail, "as parley_ (parley is in use: is the bot running?)")

	bad := setup(t, irctest.Options{Password: "right"}, func(a *Adapter) { a.Password = "wrong" })
	_, err = bad.a.Probe(context.Background())
	require.ErrorContains(t, err, "fix adapters.irc.password")
	require.NotContains(t, err.Error(), "wrong")
}

func TestStopQuits(t *testing.T) {
	t.Parallel()
	b := setup(t, irctest.Options{}, nil)
	b.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.a.Stop(ctx))
	require.Equal(t, "QUIT Goodbye", b.srv.WaitReceived(t, "QUIT", waitFor))
	b.srv.WaitDisconnected(t, waitFor)
	_, err := b.a.Send(ctx, core.OutboundMessage{ChannelThreadID: "alice", Text: "late"})
	require.ErrorIs(t, err, errStopped)
}

func TestStartFails(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	b := setup(t, irctest.Options{}, func(a *Adapter) { a.Server = addr })
	require.ErrorContains(t, b.tryStart(), "connection refused")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		change     func(a *Adapter)
	}{
		{"no server", "server must be host:port", func(a *Adapter) { a.Server = "" }},
		{"no port", "server must be host:port", func(a *Adapter) { a.Server = "irc.example.org" }},
		{"channel as nick", "not a valid IRC nick", func(a *Adapter) { a.Nick = "#bot" }},
		{"long nick", "not a valid IRC nick", func(a *Adapter) { a.Nick = strings.Repeat("n", 31) }},
		{"sasl without password", "sasl needs a password", func(a *Adapter) { a.SASL = true }},
		{"line break in password", "line breaks", func(a *Adapter) { a.Password = config.Secret("a\nb") }},
		{"zero rate", "send_rate", func(a *Adapter) { a.SendRate.PerSecond = 0 }},
	} {
		a := New()
		a.Server = "irc.example.org:6697"
		tc.change(a)
		require.ErrorContains(t, a.Validate(), tc.want, tc.name)
	}
	a := New()
	a.Server = "irc.example.org:6697"
	require.NoError(t, a.Validate())
}

func TestLineRoom(t *testing.T) {
	t.Parallel()
	require.Equal(t, 363, lineRoom("parley", "alice"))
	// The longest prefix RFC 2812 allows still fits.
	nick, target := strings.Repeat("n", 30), strings.Repeat("t", 30)
	relayed := ":" + nick + "!" + strings.Repeat("u", 10) + "@" + strings.Repeat("h", 63) + " PRIVMSG " + target + " :" +
		strings.Repeat("x", lineRoom(nick, target)) + "\r\n"
	require.Len(t, relayed, 512)
}

func TestWrap(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"aaaa bbbb", "cccc"}, wrap("aaaa bbbb cccc", 9, false))
	require.Equal(t, []string{"aaaa ", "bbbb cccc"}, wrap("aaaa bbbb cccc", 9, true))
	require.Equal(t, []string{"🙂", "🙂", "🙂"}, wrap("🙂🙂🙂", 5, false))
	require.Equal(t, []string{"🙂", "🙂"}, wrap("🙂🙂", 2, false), "a character over the room goes alone")
	require.Empty(t, wrap("", 10, false))
}

// FuzzWrap: pieces fit the room (unless one character is over it), are
// UTF-8, and give the line back: exactly when spaces are kept, up to the
// space at each cut otherwise.
func FuzzWrap(f *testing.F) {
	f.Add("Grüße schön 日本語 naïve café 🙂🙂🙂 plain words", 7)
	f.Add("aaaa bbbb cccc", 9)
	f.Add("   leading  and  double  spaces ", 4)
	f.Fuzz(func(t *testing.T, s string, room int) {
		// Any input is brought into the domain rather than skipped: text
		// as UTF-8, room in [4, 600].
		s = strings.ToValidUTF8(s, "?")
		room = within(room, 4, 600)
		for _, keep := range []bool{true, false} {
			ps := wrap(s, room, keep)
			for _, p := range ps {
				require.True(t, utf8.ValidString(p))
				require.True(t, len(p) <= room || utf8.RuneCountInString(p) == 1, "%q over %d", p, room)
			}
			if keep {
				require.Equal(t, s, strings.Join(ps, ""))
			} else {
				require.Equal(t, squeeze(s), squeeze(strings.Join(ps, "")))
			}
		}
	})
}

// FuzzPlan: whatever the text and limits, every line the bot would write
// fits IRC's 512 bytes once relayed, holds no line break or NUL and is
// UTF-8, and each multiline batch keeps to max-bytes and max-lines.
func FuzzPlan(f *testing.F) {
	f.Add("Grüße schön\n\n日本語 naïve café 🙂🙂🙂 plain words", 0, 0)
	f.Add("```go\nfmt.Println(\"héllo\")\n```\n\npara "+strings.Repeat("wörd ", 300), 400, 4)
	f.Add(strings.Repeat("🙂", 2000), 4096, 100)
	f.Add("a\r\nb\x00c\x01d\n\n\n", 100, 2)
	f.Fuzz(func(t *testing.T, text string, maxBytes, maxLines int) {
		// Limits are brought into what a server may advertise rather than
		// skipped: max-bytes 0 (none) or [100, 65536], max-lines 0 (none)
		// or [2, 1000].
		if maxBytes != 0 {
			maxBytes = within(maxBytes, 100, 1<<16)
		}
		if maxLines != 0 {
			maxLines = within(maxLines, 2, 1000)
		}
		a := New()
		c := &conn{a: a, nick: "parley", casemap: "rfc1459", mlBytes: maxBytes, mlLines: maxLines}
		target := "alice"
		for _, msg := range c.plan(target, strings.ToValidUTF8(text, "?")) {
			size, n := 0, 0
			for _, l := range msg {
				rest := l
				if strings.HasPrefix(l, "@") {
					_, rest, _ = strings.Cut(l, " ")
				}
				require.LessOrEqual(t, len(rest)+2, 512, "%q", l)
				require.True(t, utf8.ValidString(l))
				require.NotContains(t, l, "\n")
				require.NotContains(t, l, "\x00")
				if body, ok := strings.CutPrefix(rest, "PRIVMSG "+target+" :"); ok {
					require.LessOrEqual(t, len(body), lineRoom("parley", target))
					size += len(body) + 1
					n++
				}
			}
			if maxBytes > 0 {
				require.LessOrEqual(t, size-1, maxBytes)
				if maxLines > 0 {
					require.LessOrEqual(t, n, maxLines)
				}
			}
		}
	})
}

// FuzzInbound: no line from a server makes the reader panic, and what it
// hands to the core is a direct message with text.
func FuzzInbound(f *testing.F) {
	f.Add(":alice!a@h PRIVMSG parley :\x02hi\x02 \x0304,01there\x03", "@time=2024-01-01T00:00:00.000Z;msgid=x\\sy :alice!a@h PRIVMSG Parley :caf\xe9")
	f.Add(":alice!a@h BATCH +b draft/multiline parley", "@batch=b;draft/multiline-concat :alice!a@h PRIVMSG parley :\x03")
	f.Add(":alice!a@h BATCH -b", "@ : :")
	f.Fuzz(func(t *testing.T, l1, l2 string) {
		a := New()
		c := &conn{a: a, nick: "parley", casemap: "rfc1459", serverTime: true, batches: map[string]*batch{}}
		for _, l := range []string{l1, l2, ":bob!b@h PRIVMSG parley :sentinel"} {
			m, ok := parse(l)
			switch {
			case !ok:
			case m.command == "PRIVMSG":
				c.privmsg(m)
			case m.command == "BATCH":
				c.batch(m)
			}
		}
		items := a.inbox.items
		require.NotEmpty(t, items)
		for _, m := range items {
			require.True(t, m.Direct)
			require.NotEmpty(t, strings.TrimSpace(m.Text))
			require.True(t, utf8.ValidString(m.Text))
			require.NotEmpty(t, m.ChannelThreadID)
		}
		require.Equal(t, "sentinel", items[len(items)-1].Text)
	})
}

// within maps any n onto [lo, hi], for bringing fuzzed numbers into range.
func within(n, lo, hi int) int {
	return lo + int(uint(n)%uint(hi-lo+1))
}
