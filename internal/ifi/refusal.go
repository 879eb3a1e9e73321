package ifi

import "strings"

// Refusal is an error returned before anything changed: the asked-for change must
// not be made here. Every refusal has one grammar (refusal builds it): what was
// asked, why not, what was left unchanged, and the ways out. Summary and Detail are
// ready for the user; Detail is the parts in one text.
type Refusal struct {
	Summary   string
	Asked     string   // what was asked, a clause: "Instance X on H needs a restart (…)"
	WhyNot    string   // why it is not done, a clause
	Unchanged string   // what was left unchanged, a sentence
	WaysOut   []string // the ways out, each a clause, tried in order
	Detail    string
}

func (r *Refusal) Error() string { return r.Summary + ": " + r.Detail }

// refusal is the one grammar of a refusal: what was asked, why not, what was left
// unchanged, and the ways out (each a clause, tried in order).
func refusal(summary, asked, whyNot, unchanged string, waysOut ...string) *Refusal {
	r := &Refusal{Summary: summary, Asked: capitalize(asked), WhyNot: whyNot, Unchanged: unchanged, WaysOut: waysOut}
	r.Detail = r.detail()
	return r
}

// detail writes the parts as one text, "Asked, but why not. Unchanged. To go on:
// a; or b.", in that order.
func (r *Refusal) detail() string {
	d := r.Asked + ", but " + r.WhyNot + ". " + r.Unchanged
	if len(r.WaysOut) > 0 {
		d += " To go on: " + strings.Join(r.WaysOut, "; or ") + "."
	}
	return d
}

// What a refusal left unchanged.
const (
	nothingChanged          = "Nothing was changed on this instance."
	nothingChangedOnAnyNode = "Nothing was changed on any node."
)

// restartNever is the way out of every restart refusal: leave the restart to the user.
const restartNever = `set restart = "never" and restart in a maintenance window`
