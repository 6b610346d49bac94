// Command custombot is Parley as shipped plus two out-of-tree modules: the
// IRC adapter and the dice plugin. A custom binary is this file: the app,
// the built-in modules, yours, and one call.
package main

import (
	"github.com/parleybot/parley/app"
	_ "github.com/parleybot/parley/examples/dice"
	_ "github.com/parleybot/parley/examples/ircadapter"
	_ "github.com/parleybot/parley/standard"
)

func main() { app.Main() }
