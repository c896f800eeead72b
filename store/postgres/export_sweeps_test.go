package postgres

// The sweep queries whose plans the external tests check.
const (
	ListSweepsSQL   = listSweepsSQL
	ActiveSweepsSQL = activeSweepsSQL
	// DeleteFinishedSQL is retention's delete.
	DeleteFinishedSQL = deleteFinishedSQL
)

// The queries of a page of a sweep's trials (SweepTrials).
const (
	SweepTrialsHeadSQL = sweepTrialsHeadSQL
	SweepTrialsSQL     = sweepTrialsSQL
)
