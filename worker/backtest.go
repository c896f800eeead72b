package worker

// BacktestConfig configures multi-market backtests and AI generation.
type BacktestConfig struct{}

// registerBacktest adds the backtest and AI handlers.
func (s *Server) registerBacktest(BacktestConfig) {}
