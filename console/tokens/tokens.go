// Package tokens is the console's table of the tokens the model used, per
// day and model, with what they cost where the owner set a price.
package tokens

import (
	"fmt"
	"sort"

	"github.com/parleybot/parley/console/chart"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

// Table is the token usage per day and model, with the estimated
// cost where the owner set a price.
type Table struct {
	Rows []Row
	// Totals are per model, over the days shown.
	Totals []Row
	// Priced is true when console.prices has any price; Cost is the
	// estimated total over the models that have one.
	Priced bool
	Cost   string
	Days   int
}

// Row is one day's, or one model's total.
type Row struct {
	Day, Model         string
	Prompt, Completion string
	// Cost is the estimate, "" when the model has no price.
	Cost string
}

// NewTable is the table of days (newest first) and of each model's
// total, priced at prices (per million tokens) where they name the model;
// shown says over how many days.
func NewTable(days []core.TokenDay, prices map[string]config.Price, shown int) Table {
	t := Table{Priced: len(prices) > 0, Days: shown}
	type sum struct{ prompt, completion int64 }
	totals := map[string]*sum{}
	var total float64
	sorted := append([]core.TokenDay(nil), days...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Day != sorted[j].Day {
			return sorted[i].Day > sorted[j].Day // newest first
		}
		return sorted[i].Model < sorted[j].Model
	})
	for _, d := range sorted {
		row := Row{Day: d.Day, Model: d.Model, Prompt: chart.Count(d.Prompt), Completion: chart.Count(d.Completion)}
		if c, ok := cost(prices, d.Model, d.Prompt, d.Completion); ok {
			row.Cost = money(c)
			total += c
		}
		t.Rows = append(t.Rows, row)
		s := totals[d.Model]
		if s == nil {
			s = &sum{}
			totals[d.Model] = s
		}
		s.prompt += d.Prompt
		s.completion += d.Completion
	}
	models := make([]string, 0, len(totals))
	for m := range totals {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		s := totals[m]
		row := Row{Model: m, Prompt: chart.Count(s.prompt), Completion: chart.Count(s.completion)}
		if c, ok := cost(prices, m, s.prompt, s.completion); ok {
			row.Cost = money(c)
		}
		t.Totals = append(t.Totals, row)
	}
	if t.Priced {
		t.Cost = money(total)
	}
	return t
}

// cost estimates what tokens of model cost at its price per million.
func cost(prices map[string]config.Price, model string, prompt, completion int64) (float64, bool) {
	p, ok := prices[model]
	if !ok {
		return 0, false
	}
	return float64(prompt)/1e6*p.Prompt + float64(completion)/1e6*p.Completion, true
}

// money writes an estimated amount: cents, or more digits for amounts
// under a cent.
func money(v float64) string {
	if v != 0 && v < 0.01 {
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
