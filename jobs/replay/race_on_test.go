//go:build race

package replay

// raceEnabled: the race detector slows this package's pure, one-goroutine
// property tests several times over while finding nothing in them, so under
// -race they draw fewer random cases (see propertyCases).
const raceEnabled = true
