package api

// registerExchange registers the exchange endpoints of SPEC 4.3.
func (s *Server) registerExchange() {}
