package api

// AIConfig configures the Backtest AI agent (SPEC 4.4, DESIGN 8).
type AIConfig struct{}

// registerBacktestAI registers the Backtest AI endpoints and bearer tokens.
func (s *Server) registerBacktestAI() {}
