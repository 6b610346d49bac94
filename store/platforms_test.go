package store_test

import "github.com/parleybot/parley/core"

// The platforms of the conversations these tests make. core names no
// platform (each adapter package declares its own, e.g. telegram.Platform).
const (
	web     core.Platform = "web"
	console core.Platform = "console"
)
