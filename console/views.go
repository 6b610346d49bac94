package console

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"net/http"

	"github.com/parleybot/parley/console/chart"
)

//go:embed templates/*.html
var templateFS embed.FS

// pageNames are the console's templates, each parsed with the layout and
// the parts pages share.
var pageNames = []string{"login", "error", "overview", "jobs", "job", "conversations", "conversation"}

// pages are the parsed templates. Parsed once: a template error is a bug
// found by any test, not at request time.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
	}
	return out
}()

// funcs are the templates' helpers: building a part's data and a little
// arithmetic for charts.
var funcs = template.FuncMap{
	"row": func(j jobRowItem, csrf string) rowContext { return rowContext{J: j, CSRF: csrf} },
	"jobs": func(list []jobRowItem, csrf, id string) jobTable {
		return jobTable{Jobs: list, CSRF: csrf, ID: id}
	},
	"minus": func(d, v int) int { return v - d },
	"plus":  func(d, v int) int { return v + d },
}

// jobTable is a list of jobs with what its forms need.
type jobTable struct {
	Jobs []jobRowItem
	CSRF string
	ID   string
}

// render writes page with v. html/template escapes every value for its
// context, so user text is always text, never markup.
func (s *Console) render(w http.ResponseWriter, r *http.Request, code int, page string, v any) {
	var buf bytes.Buffer
	if err := pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		// Rendered into a buffer first so a failure is a clean 500, not
		// half a page.
		s.log.Error("console: rendering a page", "page", page, "path", r.URL.Path, "err", err)
		http.Error(w, "internal error rendering the page; see the bot's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

// layout is what every page's frame needs.
type layout struct {
	// CSRF is the session's CSRF token; empty when logged out (no
	// navigation and no logout button then).
	CSRF string
	// Nav is the section of the console the page is in, for the menu.
	Nav string
	// Live is the page's event stream ("" when it has none): the script
	// replaces the page's live sections with what it sends.
	Live string
	// Bot is the bot picked (?bot=; "" for every bot): the menu, the
	// forms and the links keep it. Bots is the picker (none with one bot).
	Bot  string
	Bots []option
}

func (l *layout) frame() *layout { return l }

// framed is a view with the page frame.
type framed interface{ frame() *layout }

type loginView struct {
	layout
	Next  string
	Error string
}

type errorView struct {
	layout
	Code    int
	Status  string
	Message string
}

// pageError is a page that cannot be shown, with what to tell the owner.
type pageError struct {
	code int
	msg  string
}

func (e pageError) Error() string { return e.msg }

// pageFailed answers a page or stream that could not be built: the
// owner's mistake (a missing conversation, a bad filter) with its code,
// anything else as a 500 with the details in the log.
func (s *Console) pageFailed(w http.ResponseWriter, r *http.Request, err error) {
	var pe pageError
	if errors.As(err, &pe) {
		s.fail(w, r, pe.code, pe.msg)
		return
	}
	s.internal(w, r, "building the page", err)
}

// Time layouts. Pages say which zone their times are in.
const (
	// utcLayout is how the conversations list shows times (always UTC).
	utcLayout = "2006-01-02 15:04 UTC"
	// timeLayout is how a conversation's page shows times, in its zone.
	timeLayout = "2006-01-02 15:04:05 MST"
	// shortLayout is a due time on the jobs page and the overview.
	shortLayout = chart.ShortLayout
)

// conversationItem is a conversation in a list.
type conversationItem struct {
	ID int64
	// Bot is its bot's id, with several bots ("" with one).
	Bot          string
	Platform     string
	Name         string
	UserID       string
	TimeZone     string
	Messages     int64
	LastActivity string
	// Last is the newest message, shortened (the overview only).
	Last, LastRole string
}
