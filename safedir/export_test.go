package safedir

// UseStatx turns the statx path of Stamp on or off, for tests of the
// fallback. It returns the previous setting.
func UseStatx(on bool) bool { return !noStatx.Swap(!on) }
