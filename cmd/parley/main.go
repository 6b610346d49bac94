// Command parley runs a Parley bot with every built-in adapter and plugin:
// `parley run` serves the configured adapters, `parley chat` talks to the
// same bot in the terminal. To add adapters or plugins of your own, build
// a main like this one that imports them too (see the app package).
package main

import (
	"github.com/parleybot/parley/app"
	_ "github.com/parleybot/parley/standard"
)

func main() { app.Main() }
