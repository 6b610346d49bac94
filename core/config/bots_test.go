package config_test

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

// twoBots is a config with two bots over shared top-level defaults.
const twoBots = `llm:
  api_key: sk-top-level-key
  model: gpt-4o-mini
  timeout: 30s
  max_concurrency: 64
bot:
  timezone: Europe/Paris
  limits: {turns_per_day: 100}
voice: {replies: mirror}
plugins:
  persona: {name: Subaru}
  mood: {enabled: false}
mcp:
  servers:
    notes: {command: notes-mcp, env: {NOTES_TOKEN: top-notes-token}}
runs: {debounce: 2s}
bots:
  - id: ada
    llm: {model: gpt-4o, light_model: gpt-4o-mini}
    bot:
      limits: {turns_per_day: 10}
    adapters:
      telegram: {token: "111:ada-token"}
    plugins:
      persona: {name: Ada, file: ada.md}
    mcp:
      servers:
        notes: {env: {NOTES_TOKEN: ada-notes-token}}
        search: {url: "https://mcp.example.com/mcp"}
  - id: support_2
    llm: {api_key: "${SUPPORT_KEY}", base_url: "http://localhost:11434/v1"}
    adapters:
      telegram: {token: "222:support-token"}
      discord: {token: discord-support}
    voice: {replies: never}
    commands: {enabled: false}
`

func TestBotsInheritWhatTheyLeaveOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["SUPPORT_KEY"] = "sk-support"
	c := b.mustParse(t, twoBots)

	bots := c.BotConfigs()
	require.Len(t, bots, 2)
	ada, support := bots[0], bots[1]
	require.Equal(t, "ada", ada.BotID)
	require.Equal(t, "support_2", support.BotID)

	// llm: a key the bot sets is its own, the rest the top level's.
	require.Equal(t, "gpt-4o", ada.LLM.Model)
	require.Equal(t, "gpt-4o-mini", ada.LightModel())
	require.Equal(t, "sk-top-level-key", ada.LLM.APIKey.Reveal())
	require.Equal(t, 30*time.Second, ada.LLM.Timeout)
	require.Equal(t, "gpt-4o-mini", support.LLM.Model)
	require.Equal(t, "sk-support", support.LLM.APIKey.Reveal())
	require.Equal(t, "http://localhost:11434/v1", support.LLM.BaseURL)
	require.Equal(t, 64, ada.LLM.MaxConcurrency, "model requests are paced for the whole process")
	require.Equal(t, 64, support.LLM.MaxConcurrency)

	// bot, voice, commands: key by key.
	require.Equal(t, "Europe/Paris", ada.Location().String())
	require.Equal(t, 10, ada.Bot.Limits.TurnsPerDay)
	require.Equal(t, 100, support.Bot.Limits.TurnsPerDay)
	require.Equal(t, config.VoiceMirror, ada.Voice.Replies)
	require.Equal(t, config.VoiceNever, support.Voice.Replies)
	require.True(t, ada.Commands.Enabled)
	require.False(t, support.Commands.Enabled)

	// plugins: a section the bot writes replaces the top level's whole.
	var persona struct {
		Name string `yaml:"name"`
		File string `yaml:"file"`
	}
	require.NoError(t, ada.Plugins["persona"].Decode(&persona))
	require.Equal(t, "Ada", persona.Name)
	require.Equal(t, "ada.md", persona.File)
	require.Equal(t, "bots[0].plugins.persona", ada.Plugins["persona"].Path)
	require.Equal(t, "plugins.persona", support.Plugins["persona"].Path)
	require.False(t, ada.Plugins["mood"].Enabled, "mood is off for every bot, as at the top level")

	// mcp: a server of the same name takes the bot's keys over the top level's.
	notes := ada.MCP.Servers["notes"]
	require.Equal(t, "notes-mcp", notes.Command)
	require.Equal(t, "ada-notes-token", notes.Env["NOTES_TOKEN"].Reveal())
	require.Contains(t, ada.MCP.Servers, "search")
	require.NotContains(t, support.MCP.Servers, "search")
	require.Equal(t, "top-notes-token", support.MCP.Servers["notes"].Env["NOTES_TOKEN"].Reveal())
	require.Equal(t, "top-notes-token", c.MCP.Servers["notes"].Env["NOTES_TOKEN"].Reveal(), "the top level is left as written")

	// adapters are each bot's own.
	require.Equal(t, []string{"telegram"}, keys(ada.Adapters))
	require.Equal(t, []string{"discord", "telegram"}, keys(support.Adapters))
	require.Equal(t, "bots[1].adapters.discord", support.Adapters["discord"].Path)

	// Shared sections are the top level's, and each bot's config stands alone.
	for _, bot := range bots {
		require.Equal(t, 2*time.Second, bot.Runs.Debounce)
		require.Equal(t, c.Store, bot.Store)
		require.Equal(t, c.HTTP, bot.HTTP)
		require.Nil(t, bot.Bots)
		require.NoError(t, bot.Validate())
	}
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func TestWithoutBotsOneDefaultBotRunsTheTopLevel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	example, err := os.ReadFile("../../config.example.yaml")
	require.NoError(t, err)

	for name, c := range map[string]*config.Config{
		"defaults": config.Default(),
		"example":  b.mustParse(t, string(example)),
	} {
		bots := c.BotConfigs()
		require.Len(t, bots, 1, name)
		want := *c
		want.BotID = config.DefaultBotID
		require.Equal(t, &want, bots[0], name)
		require.Empty(t, c.BotID, "%s: BotConfigs leaves the config as it was", name)
		require.Equal(t, bots, bots[0].BotConfigs(), "%s: a bot's config is that bot", name)
	}
}

func TestBotMistakesNameTheBot(t *testing.T) {
	t.Parallel()
	const tg = "    adapters: {telegram: {token: \"1:a\"}}\n"
	for name, tc := range map[string]struct{ src, want string }{
		"bad id": {
			"bots:\n  - id: Ada\n" + tg,
			`config.yaml:2: bots[0].id: must be 1 to 32 of a-z, 0-9, "-" and "_", got "Ada"`,
		},
		"long id": {
			"bots:\n  - id: " + strings.Repeat("a", 33) + "\n",
			`config.yaml:2: bots[0].id: must be 1 to 32 of a-z, 0-9, "-" and "_", got "` + strings.Repeat("a", 33) + `"`,
		},
		"missing id": {
			"bots:\n  - id: ada\n  - bot: {timezone: UTC}\n",
			`config.yaml:3: bots[1].id: is required: 1 to 32 of a-z, 0-9, "-" and "_"`,
		},
		"duplicate id": {
			"bots:\n  - id: ada\n  - id: bob\n  - id: ada\n",
			`config.yaml:4: bots[2].id: is bots[0]'s id too: each bot needs its own, got "ada"`,
		},
		"duplicate telegram token": {
			"bots:\n  - id: ada\n" + tg + "  - id: bob\n" + tg,
			`config.yaml:5: bots[1].adapters.telegram.token: is the same as bots[0].adapters.telegram.token: two bots cannot share one Telegram bot`,
		},
		"duplicate discord token": {
			"bots:\n  - id: ada\n    adapters:\n      discord: {token: dtok}\n  - id: bob\n    adapters:\n      discord:\n        token: dtok\n",
			`config.yaml:8: bots[1].adapters.discord.token: is the same as bots[0].adapters.discord.token: two bots cannot share one Discord bot`,
		},
		"duplicate slack token": {
			"bots:\n  - id: ada\n    adapters: {slack: {bot_token: xoxb-1, app_token: xapp-1}}\n" +
				"  - id: bob\n    adapters: {slack: {bot_token: xoxb-1, app_token: xapp-2}}\n",
			`config.yaml:5: bots[1].adapters.slack.bot_token: is the same as bots[0].adapters.slack.bot_token: two bots cannot share one Slack app`,
		},
		"unknown key in a bot": {
			"bots:\n  - id: ada\n    persona: {name: Ada}\n",
			`config.yaml:3: bots[0].persona: unknown key`,
		},
		"unknown key in a bot's section": {
			"bots:\n  - id: ada\n    llm:\n      modle: gpt-4o\n",
			`config.yaml:4: bots[0].llm.modle: unknown key`,
		},
		"bad value in a bot": {
			"bots:\n  - id: ada\n  - id: bob\n    llm:\n      timeout: 5 parsecs\n",
			`config.yaml:5: bots[1].llm.timeout: invalid duration "5 parsecs"`,
		},
		"invalid value in a bot": {
			"bots:\n  - id: ada\n    bot: {timezone: Mars/Olympus}\n",
			`config.yaml:3: bots[0].bot.timezone: unknown time zone "Mars/Olympus"`,
		},
		"bad mcp server in a bot": {
			"bots:\n  - id: ada\n    mcp:\n      servers:\n        x: {url: ftp://nope}\n",
			`config.yaml:5: bots[0].mcp.servers.x.url: must be an absolute http or https URL, got "ftp://nope"`,
		},
		"bot llm timeout past the turn's": {
			"runs: {turn_timeout: 90s}\nbots:\n  - id: ada\n    llm: {timeout: 2m}\n",
			`config.yaml:4: bots[0].llm.timeout: must be shorter than runs.turn_timeout (1m30s): a turn makes at least one model call, got 2m0s`,
		},
		"shared section in a bot": {
			"bots:\n  - id: ada\n    store: {driver: sqlite}\n",
			`config.yaml:3: bots[0].store: is shared by every bot: set it at the top level, not in a bot`,
		},
		"shared llm key in a bot": {
			"bots:\n  - id: ada\n    llm:\n      requests_per_minute: 60\n",
			`config.yaml:4: bots[0].llm.requests_per_minute: is shared by every bot: set llm.requests_per_minute at the top level`,
		},
		"adapters beside bots": {
			"adapters:\n  web: {enabled: true}\nbots:\n  - id: ada\n",
			`config.yaml:2: adapters: must not be set beside bots: each bot has its own, under bots[N].adapters (two bots cannot share a token)`,
		},
		"empty bots": {
			"bots: []\n",
			`config.yaml:1: bots: must list at least one bot, or be left out for one bot`,
		},
		"bots not a list": {
			"bots: {id: ada}\n",
			`config.yaml:1: bots: expected a list, got a mapping`,
		},
		"bot not a mapping": {
			"bots:\n  - ada\n",
			`config.yaml:2: bots[0]: expected a mapping, got a string`,
		},
	} {
		_, err := setup(t).parse(tc.src)
		errs := configErrors(t, err)
		require.Len(t, errs, 1, "%s: %v", name, err)
		require.Equal(t, tc.want, errs[0].Error(), name)
	}
}

func TestBotErrorsNeverShowSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["TG"] = "123456:secret-telegram-token"
	_, err := b.parse(`bots:
  - id: ada
    llm: {api_key: &k sk-ada-0123456789}
    adapters: {telegram: {token: "${TG}"}}
  - id: "${TG}"
    bot: {timezone: *k}
    adapters: {telegram: {token: "${TG}"}}
`)
	errs := configErrors(t, err)
	var text []string
	for _, e := range errs {
		text = append(text, e.Error())
	}
	require.Equal(t, []string{
		// An alias's value is where its anchor is.
		`config.yaml:3: bots[1].bot.timezone: unknown time zone "[redacted]"`,
		`config.yaml:5: bots[1].id: must be 1 to 32 of a-z, 0-9, "-" and "_", got a value from the environment (not shown)`,
		`config.yaml:7: bots[1].adapters.telegram.token: is the same as bots[0].adapters.telegram.token: two bots cannot share one Telegram bot`,
	}, text)
}

func TestBotInheritingABadValueIsToldOnce(t *testing.T) {
	t.Parallel()
	_, err := setup(t).parse("bot: {timezone: Mars/Olympus}\nbots:\n  - id: ada\n  - id: bob\n")
	errs := configErrors(t, err)
	require.Len(t, errs, 1)
	require.Equal(t, `config.yaml:1: bot.timezone: unknown time zone "Mars/Olympus"`, errs[0].Error())
}

func TestBotsSharingATokenOnlyWhenBothAreOn(t *testing.T) {
	t.Parallel()
	c := setup(t).mustParse(t, `bots:
  - id: ada
    adapters: {telegram: {token: "1:a"}}
  - id: old_ada
    adapters: {telegram: {token: "1:a", enabled: false}}
`)
	require.Len(t, c.BotConfigs(), 2)
}

func TestValidateChecksBotsBuiltInCode(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Bots = []config.BotConfig{{ID: "ada", Bot: c.Bot, LLM: c.LLM, Voice: c.Voice, Media: c.Media}, {Bot: c.Bot, LLM: c.LLM, Voice: c.Voice, Media: c.Media}}
	c.Bots[0].LLM.Model = ""
	c.Bots[0].LLM.MaxConcurrency = 1
	err := c.Validate()
	var text []string
	for _, e := range configErrors(t, err) {
		text = append(text, e.Error())
	}
	require.Equal(t, []string{
		"config: bots[0].llm.model: must not be empty",
		"config: bots[0].llm.max_concurrency: is shared by every bot: set llm.max_concurrency at the top level",
		`config: bots[1].id: is required: 1 to 32 of a-z, 0-9, "-" and "_"`,
	}, text)
}

// TestExampleBotsBlockLoads uncomments the bots: example at the end of
// config.example.yaml, moving the top-level adapters out as it says.
func TestExampleBotsBlockLoads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	data, err := os.ReadFile("../../config.example.yaml")
	require.NoError(t, err)
	src := string(data)
	start, end := strings.Index(src, "\nadapters:\n"), strings.Index(src, "\nruns:\n")
	require.True(t, start > 0 && end > start, "the example has adapters: before runs:")
	src = src[:start] + src[end:]
	block := strings.Index(src, "# bots:\n")
	require.Positive(t, block, "the example shows bots:")
	var bots []string
	for line := range strings.Lines(src[block:]) {
		bots = append(bots, strings.TrimPrefix(line, "# "))
	}
	c := b.mustParse(t, src[:block]+strings.Join(bots, ""))

	got := c.BotConfigs()
	require.Len(t, got, 2)
	require.Equal(t, "ada", got[0].BotID)
	require.Equal(t, "gpt-4o", got[0].LLM.Model)
	require.Equal(t, "support", got[1].BotID)
	require.Equal(t, 50, got[1].Bot.Limits.TurnsPerDay)
	require.Equal(t, []string{"discord", "telegram"}, keys(got[1].Adapters))
}
