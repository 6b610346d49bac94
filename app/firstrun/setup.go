// Package firstrun is `parley init`: it asks a new owner for the model, the
// platforms and the database, checks each answer live as it is given
// (the model answers, the token is accepted), and writes a commented
// config file, never over an existing one without asking. With
// Answers.NonInteractive it asks nothing: the flags' values and the
// defaults are the answers, and a failed check fails the command.
package firstrun

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Answers are the owner's choices; the flags fill them for a script.
type Answers struct {
	ModelURL, APIKey, Model string
	// APIKeyEnv, when set, is written as ${NAME} instead of APIKey.
	APIKeyEnv                       string
	TelegramToken, TelegramAPIURL   string
	DiscordToken, DiscordAPIURL     string
	SlackBotToken, SlackAppToken    string
	SlackAPIURL                     string
	Database                        string
	NonInteractive, Force, NoChecks bool
}

// Defaults for what the owner leaves empty.
const (
	DefaultModelURL = "https://api.openai.com/v1"
	DefaultModel    = "gpt-4o-mini"
	DefaultDatabase = "parley.db"
	openAIKeyEnv    = "OPENAI_API_KEY"
)

// Checker checks one part of the config written as yaml, as `parley
// doctor` does: "llm", "telegram", "discord", "slack". It returns what it
// found or why the part does not work.
type Checker func(ctx context.Context, yaml, part string) (string, error)

// Wizard asks, checks and writes.
type Wizard struct {
	In     io.Reader
	Out    io.Writer
	Path   string
	Check  Checker
	Lookup func(string) (string, bool)

	in *bufio.Scanner
}

// errInputEnded is the owner's input running out mid-way.
var errInputEnded = errors.New("init: the input ended before every question was answered")

// Run asks what a is missing (or, non-interactive, takes it as it is),
// checks it and writes the config file.
func (w *Wizard) Run(ctx context.Context, a Answers) error {
	w.in = bufio.NewScanner(w.In)
	if err := w.mayWrite(a); err != nil {
		return err
	}
	if !a.NonInteractive {
		fmt.Fprintf(w.Out, "Parley: a few questions, each checked as you answer; Enter takes the [default].\n\n")
	}
	if err := w.model(ctx, &a); err != nil {
		return err
	}
	if err := w.platforms(ctx, &a); err != nil {
		return err
	}
	if err := w.database(ctx, &a); err != nil {
		return err
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	text := Render(a, token)
	if err := os.WriteFile(w.Path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("init: writing %s: %w", w.Path, err)
	}
	fmt.Fprintf(w.Out, "\nWrote %s (readable by you only: it holds your keys).\n", w.Path)
	fmt.Fprintf(w.Out, "Start the bot:     parley run -c %s\n", w.Path)
	fmt.Fprintf(w.Out, "Check it any time: parley doctor -c %s\n", w.Path)
	fmt.Fprintf(w.Out, "The web chat is at http://127.0.0.1:8080/ and the console at http://127.0.0.1:8080/console/,\n"+
		"where you sign in with the api_token written in the file.\n")
	return nil
}

// mayWrite refuses to replace an existing file unless a.Force or the
// owner says so.
func (w *Wizard) mayWrite(a Answers) error {
	if _, err := os.Stat(w.Path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("init: %w", err)
	}
	if a.Force {
		return nil
	}
	if a.NonInteractive {
		return fmt.Errorf("init: %s exists: pass --force to replace it, or -c to write another file", w.Path)
	}
	yes, err := w.yesNo(w.Path+" exists. Replace it", false)
	if err != nil {
		return err
	}
	if !yes {
		return fmt.Errorf("init: %s kept as it is; pass -c to write another file", w.Path)
	}
	return nil
}

// model asks for the model server, key and model, and checks them until
// they answer (or the owner keeps them anyway).
func (w *Wizard) model(ctx context.Context, a *Answers) error {
	for {
		if !a.NonInteractive {
			var err error
			if a.ModelURL, err = w.ask("Model server (any OpenAI-compatible URL: OpenAI, Ollama, vLLM…)", or(a.ModelURL, DefaultModelURL)); err != nil {
				return err
			}
			if err := w.askKey(a); err != nil {
				return err
			}
			if a.Model, err = w.ask("Model", or(a.Model, DefaultModel)); err != nil {
				return err
			}
		}
		a.ModelURL, a.Model = or(a.ModelURL, DefaultModelURL), or(a.Model, DefaultModel)
		ok, err := w.checked(ctx, *a, "llm", "the model")
		if err != nil || ok {
			return err
		}
	}
}

// askKey asks for the API key; Enter keeps ${OPENAI_API_KEY} when that is
// set, or none for a local server.
func (w *Wizard) askKey(a *Answers) error {
	hint, fromEnv := "none", false
	switch v, ok := w.Lookup(openAIKeyEnv); {
	case a.APIKey != "":
		hint = "the key you gave"
	case a.APIKeyEnv != "":
		hint, fromEnv = "$"+a.APIKeyEnv+", from your environment", true
	case ok && v != "":
		hint, fromEnv = "$"+openAIKeyEnv+", from your environment", true
	}
	key, err := w.ask("API key (written to the file; Enter: "+hint+")", "")
	if err != nil {
		return err
	}
	switch {
	case key != "":
		a.APIKey, a.APIKeyEnv = key, ""
	case fromEnv && a.APIKeyEnv == "":
		a.APIKeyEnv = openAIKeyEnv
	}
	return nil
}

// database asks where the database goes and checks that it can be
// opened (a SQLite file is made by parley run; PostgreSQL must answer).
func (w *Wizard) database(ctx context.Context, a *Answers) error {
	for {
		if !a.NonInteractive {
			db, err := w.ask("Database: a SQLite file, or a postgres:// URL", or(a.Database, DefaultDatabase))
			if err != nil {
				return err
			}
			a.Database = db
		}
		if ok, err := w.checked(ctx, *a, "store", "the database"); err != nil || ok {
			return err
		}
	}
}

// platforms asks for each platform's token, checking each.
func (w *Wizard) platforms(ctx context.Context, a *Answers) error {
	type platform struct {
		part, question string
		token          *string
	}
	for _, p := range []platform{
		{"telegram", "Telegram bot token (from @BotFather; Enter to skip)", &a.TelegramToken},
		{"discord", "Discord bot token (from the Developer Portal; Enter to skip)", &a.DiscordToken},
		{"slack", "Slack bot token, xoxb-… (Enter to skip)", &a.SlackBotToken},
	} {
		for {
			if !a.NonInteractive {
				v, err := w.ask(p.question, "")
				if err != nil {
					return err
				}
				*p.token = v
				if p.part == "slack" && v != "" {
					if a.SlackAppToken, err = w.ask("Slack app-level token for Socket Mode, xapp-…", ""); err != nil {
						return err
					}
				}
			}
			if *p.token == "" {
				break
			}
			ok, err := w.checked(ctx, *a, p.part, p.part)
			if err != nil {
				return err
			}
			if ok {
				break
			}
		}
	}
	return nil
}

// checked checks part of a's config and says how it went; it reports
// whether to go on (it works, or the owner keeps it anyway). A failure,
// non-interactive, is an error.
func (w *Wizard) checked(ctx context.Context, a Answers, part, what string) (bool, error) {
	if a.NoChecks || w.Check == nil {
		return true, nil
	}
	fmt.Fprintf(w.Out, "Checking %s… ", what)
	detail, err := w.Check(ctx, Render(a, "init-check-token-0123456789"), part)
	if err == nil {
		fmt.Fprintf(w.Out, "ok: %s\n", detail)
		return true, nil
	}
	fmt.Fprintf(w.Out, "FAIL: %v\n", err)
	if a.NonInteractive {
		return false, fmt.Errorf("init: %s: %w (--no-checks writes the file all the same)", what, err)
	}
	keep, err := w.yesNo("Keep it all the same", false)
	if err != nil {
		return false, err
	}
	return keep, nil
}

// ask prints question and reads one line; Enter gives def.
func (w *Wizard) ask(question, def string) (string, error) {
	if def != "" {
		fmt.Fprintf(w.Out, "%s [%s]: ", question, def)
	} else {
		fmt.Fprintf(w.Out, "%s: ", question)
	}
	if !w.in.Scan() {
		fmt.Fprintln(w.Out)
		if err := w.in.Err(); err != nil {
			return "", fmt.Errorf("init: reading the answer: %w", err)
		}
		return "", errInputEnded
	}
	return or(strings.TrimSpace(w.in.Text()), def), nil
}

// yesNo asks a yes or no question.
func (w *Wizard) yesNo(question string, def bool) (bool, error) {
	d := "y/N"
	if def {
		d = "Y/n"
	}
	for {
		v, err := w.ask(question+"? ("+d+")", "")
		if err != nil {
			return false, err
		}
		switch strings.ToLower(v) {
		case "":
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
		fmt.Fprintln(w.Out, "Please answer y or n.")
	}
}

// newToken is a fresh console and API token: 32 random bytes in hex.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("init: making the api_token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
