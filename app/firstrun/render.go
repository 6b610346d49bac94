package firstrun

import (
	"fmt"
	"strings"
)

// Render is the config file for a, with apiToken guarding the console and
// the API: the keys a new owner needs, each commented; config.example.yaml
// has every other key.
func Render(a Answers, apiToken string) string {
	var b strings.Builder
	b.WriteString(`# Parley's config, written by parley init. Every key not here keeps its
# default; config.example.yaml lists them all, commented. Check it with
# "parley doctor -c FILE" after an edit.

`)
	driver, dsn := "sqlite", or(a.Database, DefaultDatabase)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		driver = "postgres"
	}
	fmt.Fprintf(&b, `store:
  driver: %s
  dsn: %s            # a SQLite file, or a postgres:// URL

llm:
  base_url: %s
  api_key: %s
  model: %s
  # light_model: ""    # summaries and facts, cheaper (default: model)

`, driver, quote(dsn), quote(or(a.ModelURL, DefaultModelURL)), keyValue(a), quote(or(a.Model, DefaultModel)))
	b.WriteString("adapters:\n  web: {enabled: true}       # the web chat at http://127.0.0.1:8080/\n")
	if a.TelegramToken != "" {
		fmt.Fprintf(&b, "  telegram:                  # your bot on Telegram (@BotFather)\n    token: %s\n", quote(a.TelegramToken))
		if a.TelegramAPIURL != "" {
			fmt.Fprintf(&b, "    api_url: %s\n", quote(a.TelegramAPIURL))
		}
	}
	if a.DiscordToken != "" {
		fmt.Fprintf(&b, "  discord:                   # your bot on Discord (Developer Portal)\n    token: %s\n", quote(a.DiscordToken))
		if a.DiscordAPIURL != "" {
			fmt.Fprintf(&b, "    api_url: %s\n", quote(a.DiscordAPIURL))
		}
	}
	if a.SlackBotToken != "" {
		fmt.Fprintf(&b, "  slack:                     # your Slack app, over Socket Mode\n    bot_token: %s\n    app_token: %s\n",
			quote(a.SlackBotToken), quote(a.SlackAppToken))
		if a.SlackAPIURL != "" {
			fmt.Fprintf(&b, "    api_url: %s\n", quote(a.SlackAPIURL))
		}
	}
	fmt.Fprintf(&b, `
bot:
  timezone: UTC        # your users' zone until they tell the bot theirs (IANA, e.g. Europe/Berlin)
  owners: []           # "platform:user_id" of the people who run the bot (see the README)

http:
  listen: 127.0.0.1:8080
  # Guards the console (/console/) and the API (/api/v1/): sign in with it.
  api_token: %s
`, quote(apiToken))
	return b.String()
}

// keyValue is llm.api_key as written: ${NAME}, the key, or "" for none.
func keyValue(a Answers) string {
	if a.APIKeyEnv != "" {
		return "${" + a.APIKeyEnv + "}"
	}
	return quote(a.APIKey)
}

// quote is s as a YAML double-quoted scalar; a $ is doubled so that the
// config's ${VAR} expansion leaves it as it is.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '$':
			b.WriteString("$$")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
