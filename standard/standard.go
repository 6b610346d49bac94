// Package standard registers every built-in adapter and plugin. A binary
// built on github.com/parleybot/parley/app imports it for Parley as
// shipped, beside any adapters and plugins of its own:
//
//	import _ "github.com/parleybot/parley/standard"
package standard

import (
	_ "github.com/parleybot/parley/adapters/discord"  // Discord DMs
	_ "github.com/parleybot/parley/adapters/slack"    // Slack DMs
	_ "github.com/parleybot/parley/adapters/telegram" // Telegram private chats
	_ "github.com/parleybot/parley/adapters/terminal" // the terminal (parley chat)
	_ "github.com/parleybot/parley/adapters/web"      // the browser chat
	_ "github.com/parleybot/parley/plugins/choices"
	_ "github.com/parleybot/parley/plugins/controltokens"
	_ "github.com/parleybot/parley/plugins/images"
	_ "github.com/parleybot/parley/plugins/memory"
	_ "github.com/parleybot/parley/plugins/mood"
	_ "github.com/parleybot/parley/plugins/persona"
	_ "github.com/parleybot/parley/plugins/proactive"
	_ "github.com/parleybot/parley/plugins/reactions"
	_ "github.com/parleybot/parley/plugins/schedule"
)
