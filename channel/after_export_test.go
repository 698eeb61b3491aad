package channel

// OnNewestRead sets a function called with each file Newest reads; nil:
// none.
func OnNewestRead(f func(file string)) { onNewestRead = f }
