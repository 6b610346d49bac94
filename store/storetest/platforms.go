package storetest

import "github.com/parleybot/parley/core"

// The platforms the cases put conversations on. core names no platform
// (each adapter package declares its own); to the store it is a name.
const (
	telegram core.Platform = "telegram"
	discord  core.Platform = "discord"
	slack    core.Platform = "slack"
	web      core.Platform = "web"
	console  core.Platform = "console"
)
