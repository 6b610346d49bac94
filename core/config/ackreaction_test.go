package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

func TestAckReactionIsOffByDefault(t *testing.T) {
	t.Parallel()
	require.Empty(t, config.Default().Bot.AckReaction)
	c := setup(t).mustParse(t, "bot:\n  timezone: UTC\n")
	require.Empty(t, c.Bot.AckReaction)
}

func TestAckReactionTakesOneEmoji(t *testing.T) {
	t.Parallel()
	for _, emoji := range []string{"👀", "❤️", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "1️⃣", "⏳", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "❤️‍🔥", "#️⃣"} {
		c := setup(t).mustParse(t, "bot:\n  ack_reaction: \""+emoji+"\"\n")
		require.Equal(t, emoji, c.Bot.AckReaction)
	}
}

func TestAckReactionRefusesWhatIsNoEmojiNamingLineAndKey(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"bot:\n  ack_reaction: eyes\n":                      `config.yaml:2: bot.ack_reaction: must be one emoji (e.g. "👀"), or "" for none, got "eyes"`,
		"bot:\n  ack_reaction: \":eyes:\"\n":                `config.yaml:2: bot.ack_reaction: must be one emoji (e.g. "👀"), or "" for none, got ":eyes:"`,
		"bot:\n  timezone: UTC\n  ack_reaction: \"👀 ok\"\n": `config.yaml:3: bot.ack_reaction: must be one emoji (e.g. "👀"), or "" for none, got "👀 ok"`,
		"bot:\n  ack_reaction: \" \"\n":                     `config.yaml:2: bot.ack_reaction: must be one emoji`,
		"bot:\n  ack_reaction: \"1\"\n":                     `config.yaml:2: bot.ack_reaction: must be one emoji`,
		"bot:\n  ack_reaction: \"👀👀👀👀👀👀👀👀👀👀👀👀👀\"\n":         `config.yaml:2: bot.ack_reaction: must be one emoji`,
		"bot:\n  ack_reaction: \"👀👍\"\n":                    `config.yaml:2: bot.ack_reaction: must be one emoji`,
		"bot:\n  ack_reaction: \"🇫🇷🇩🇪\"\n":                  `config.yaml:2: bot.ack_reaction: must be one emoji`,
		"bot:\n  ack_reaction: [\"👀\"]\n":                   `config.yaml:2: bot.ack_reaction: expected a string`,
	} {
		_, err := setup(t).parse(src)
		require.ErrorContains(t, err, want, "source %q", src)
	}
}

func TestAckReactionValidatesInCode(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Bot.AckReaction = "ok"
	require.ErrorContains(t, c.Validate(), `bot.ack_reaction: must be one emoji (e.g. "👀"), or "" for none, got "ok"`)
}
