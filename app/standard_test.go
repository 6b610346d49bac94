package app

// The tests run the app as cmd/parley builds it: with every built-in
// adapter and plugin registered.
import _ "github.com/parleybot/parley/standard"
