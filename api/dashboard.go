package api

// registerDashboard registers what the dashboard (DESIGN 12) needs beside
// the data endpoints: sessions, chart series, the plan catalogue,
// self-service keys.
func (s *Server) registerDashboard() {
	s.registerSession()
	s.registerSeries()
	s.registerAccountBilling()
	s.registerAccountKeys()
	documentSessions(s.api.OpenAPI())
}
