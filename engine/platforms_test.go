package engine_test

import "github.com/parleybot/parley/core"

// The platforms of the conversations these tests make. core names no
// platform (each adapter package declares its own, e.g. telegram.Platform).
const (
	telegram core.Platform = "telegram"
	discord  core.Platform = "discord"
	web      core.Platform = "web"
)
