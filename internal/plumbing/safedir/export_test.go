package safedir

// UseStatx turns the statx path of Stamp on or off, for tests of the
// fallback. It returns the previous setting.
func UseStatx(on bool) bool { return !noStatx.Swap(!on) }

// UseOpenat2 turns the openat2 path of directory opens on or off, for tests
// of the component-by-component walk. It returns the previous setting.
func UseOpenat2(on bool) bool { return !noOpenat2.Swap(!on) }
