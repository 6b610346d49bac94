// Package app is the Parley program: the CLI (`run`, `chat`, `migrate`,
// `doctor`, ...) and the wiring of store, model, plugins, adapters and
// HTTP server from the config. A binary is a main that imports the
// adapters and plugins it wants (github.com/parleybot/parley/standard for
// the built-in ones, plus its own) and calls Main:
//
//	package main
//
//	import (
//		"github.com/parleybot/parley/app"
//		_ "github.com/parleybot/parley/standard"
//		_ "example.com/mybot/ircadapter"
//	)
//
//	func main() { app.Main() }
package app

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // time zones work on machines without a zoneinfo database
)

// Main runs the CLI on the process's arguments, environment and standard
// streams, stops cleanly on SIGINT or SIGTERM, and exits with the status
// (0 clean stop, 1 failure, 2 bad config or flag).
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.LookupEnv)
	stop()
	os.Exit(code)
}
