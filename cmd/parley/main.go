// Command parley runs a Parley bot: `parley run` serves the configured
// adapters, `parley chat` talks to the same bot in the terminal.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // time zones work on machines without a zoneinfo database

	_ "github.com/parleybot/parley/adapters/console"
	_ "github.com/parleybot/parley/adapters/discord"
	_ "github.com/parleybot/parley/adapters/slack"
	_ "github.com/parleybot/parley/adapters/telegram"
	_ "github.com/parleybot/parley/adapters/web"
	_ "github.com/parleybot/parley/plugins/controltokens"
	_ "github.com/parleybot/parley/plugins/memory"
	_ "github.com/parleybot/parley/plugins/mood"
	_ "github.com/parleybot/parley/plugins/persona"
	_ "github.com/parleybot/parley/plugins/proactive"
	_ "github.com/parleybot/parley/plugins/schedule"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.LookupEnv)
	stop()
	os.Exit(code)
}
