package strategy

import "github.com/updown/updown/jobs/replay"

// preset is a named starting strategy. Thresholds are on the UP price, a
// probability: 0.5 is a coin toss, and the recorded prices of these
// markets wander mostly between 0.2 and 0.8 until the last minutes.
type preset struct {
	name        string
	description string
	side        string
	entry, exit []replay.Condition
	maxLoss     float64
}

// presets returns the four presets the reference dashboard offers, in its
// order. A function, not a variable, so no caller can change them.
func presets() []preset {
	c := func(f, op string, v float64) replay.Condition {
		return replay.Condition{Field: f, Operator: op, Value: v}
	}
	const (
		up   = replay.FieldPriceUp
		left = replay.FieldTimeRemainingPct
	)
	return []preset{{
		name:        "mean_reversion",
		description: "buy UP when it trades well below a coin toss, early enough for the price to come back; exit once it is back near 0.5 or late in the market",
		side:        replay.SideUp,
		entry:       []replay.Condition{c(up, replay.OpLess, 0.35), c(left, replay.OpGreater, 20)},
		exit:        []replay.Condition{c(up, replay.OpGreaterOrEqual, 0.5), c(left, replay.OpLessOrEqual, 10)},
		maxLoss:     25,
	}, {
		name:        "dip_buying",
		description: "buy UP the moment it dips through 0.4 with most of the market left; exit on a rebound to 0.55 or if it keeps falling to 0.25",
		side:        replay.SideUp,
		entry:       []replay.Condition{c(up, replay.OpCrossesBelow, 0.4), c(left, replay.OpGreater, 30)},
		exit:        []replay.Condition{c(up, replay.OpGreaterOrEqual, 0.55), c(up, replay.OpLessOrEqual, 0.25)},
		maxLoss:     30,
	}, {
		name:        "momentum_entry",
		description: "buy UP when it breaks above 0.6 with a quarter of the market left; ride it to 0.85 and get out if it falls back under 0.5",
		side:        replay.SideUp,
		entry:       []replay.Condition{c(up, replay.OpCrossesAbove, 0.6), c(left, replay.OpGreater, 25)},
		exit:        []replay.Condition{c(up, replay.OpGreaterOrEqual, 0.85), c(up, replay.OpLessOrEqual, 0.5)},
		maxLoss:     20,
	}, {
		name:        "quick_scalp",
		description: "buy UP just under a coin toss in the first half of the market and take a few cents: exit at 0.53, or when 40% of the market is left",
		side:        replay.SideUp,
		entry:       []replay.Condition{c(up, replay.OpLessOrEqual, 0.48), c(left, replay.OpGreater, 50)},
		exit:        []replay.Condition{c(up, replay.OpGreaterOrEqual, 0.53), c(left, replay.OpLessOrEqual, 40)},
		maxLoss:     10,
	}}
}

// Presets returns the preset names a request may give.
func Presets() []string {
	ps := presets()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return names
}

func presetNamed(name string) (preset, bool) {
	for _, p := range presets() {
		if p.name == name {
			return p, true
		}
	}
	return preset{}, false
}
