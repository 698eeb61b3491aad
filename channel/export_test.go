package channel

// Listings reports how many times r listed its folder.
func Listings(r *Reader) int { return r.listings }

// OnTailRead sets a function called with each file Tail reads; nil: none.
func OnTailRead(f func(file string)) { onTailRead = f }
