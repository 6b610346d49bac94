// Package ircadapter is a Parley adapter for IRC private messages, written
// outside the Parley module as an example of an out-of-tree adapter. It
// registers itself as "irc" (config section adapters.irc); a binary gets
// it by importing the package next to github.com/parleybot/parley/app:
//
//	package main
//
//	import (
//		"github.com/parleybot/parley/app"
//		_ "github.com/parleybot/parley/examples/ircadapter"
//		_ "github.com/parleybot/parley/standard"
//	)
//
//	func main() { app.Main() }
//
// A conversation is a user's nick, casefolded the server's way: it is both
// the channel thread id and the channel user id. Only PRIVMSGs to the
// bot's nick are direct messages; channel messages, notices, CTCP requests
// and the bot's own messages are ignored.
//
// The files: irc.go holds the config and the lifecycle (Start, Stop,
// reconnecting), conn.go one connection (registration with CAP, SASL and
// nick fallbacks, then the reader), send.go the way out (splitting to
// IRC's line limit, multiline batches, pacing, confirmation), message.go
// the protocol's line format. irctest is a small IRC server for tests.
package ircadapter
