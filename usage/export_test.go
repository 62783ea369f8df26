package usage

// SetRollFault makes every rollup after commit fail with f's error (nil: none), as a crash
// between a batch's commit and its rollups would leave it.
func SetRollFault(s *Service, f func() error) { s.rollFault = f }
